# stage sweep44: the built-in shape list, fp16 and bf16, every Hopper rung that a plan rule names (h6 h8 h9 h11 h12 h13) and the planning entry `plan`, beside cuBLAS; each shape's contenders confirmed in turns with cuBLAS; sustained regime (gemmprof run's default)
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). SWEEP44_FROM=DIR (carried): the finished runs of
# an earlier call (DIR/fp16, DIR/bf16), copied in first; the sweep resumes after them. SWEEP44_DTYPES: default fp16,bf16
if [ -n "${SWEEP44_FROM:-}" ]; then mkdir -p "$B/sweep44" && cp -r "$SWEEP44_FROM"/. "$B/sweep44/"; fi
step sweep44 "${GP[@]}" sweep h6 h8 h9 h11 h12 h13 plan --dtype "${SWEEP44_DTYPES:-fp16,bf16}" --confirm --budget "${SWEEP_BUDGET:-0.3}" --out-dir "$B/sweep44"
