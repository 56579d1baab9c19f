# stage sweep44: the built-in shape list, fp16 and bf16, every Hopper rung that a plan rule names (h6 h8 h9 h11 h12 h13) and the planning entry `plan`, beside cuBLAS, all in turns (--interleave), 1 s per variant (SWEEP_BUDGET, the sweep's default; at 0.3 s h9 and h12 ordered otherwise: benchmarks/2026-11-29_h200_sweep_1s); sustained regime (gemmprof run's default), no energy window
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). SWEEP44_FROM=DIR (carried): the finished runs
# of an earlier call (DIR/fp16, DIR/bf16), copied in first; the sweep resumes after them. (At 1 s per variant the run
# files come to about 2.4 MB a shape, past what a call carries: give a later call the shapes left in SWEEP44_SHAPES.)
# SWEEP44_DTYPES: default fp16,bf16. SWEEP44_SHAPES: default the built-in list. SWEEP44_MODEL=CONFIG.json and
# SWEEP44_TOKENS=T,T,...: a model's layers instead (sweep --model, --tokens). SWEEP44_CONFIRM=1: each shape's
# contenders again beside cuBLAS alone (--confirm). Set STEP_TIMEOUT to end the sweep inside the call (a sweep
# resumes).
if [ -n "${SWEEP44_FROM:-}" ]; then mkdir -p "$B/sweep44" && cp -r "$SWEEP44_FROM"/. "$B/sweep44/"; fi
step sweep44 "${GP[@]}" sweep h6 h8 h9 h11 h12 h13 plan --dtype "${SWEEP44_DTYPES:-fp16,bf16}" ${SWEEP44_SHAPES:+--shapes "$SWEEP44_SHAPES"} \
  ${SWEEP44_MODEL:+--model "$SWEEP44_MODEL"} ${SWEEP44_TOKENS:+--tokens "$SWEEP44_TOKENS"} \
  --interleave ${SWEEP44_CONFIRM:+--confirm} --run-option --no-energy --budget "${SWEEP_BUDGET:-1}" --out-dir "$B/sweep44"
