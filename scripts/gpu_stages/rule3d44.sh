# stage rule3d44: plan rule 3 with its epilogue from the registers (EPI_DIRECT=1): the built-in sweep's 1000^3 row again at 1 s per variant (fp16, bf16; every rung a plan rule names, in turns with cuBLAS); the plan beside h8 at rule 3's tiles with the TMA-store epilogue at rule 3's other recorded shapes; and the fitted width 128 x 72 (8 stages, EPI_DIRECT) beside the plan
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rule3d44"
step rule3d44_verify python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/test_hopper_split_k.py -k "epilogue_from_the_registers"
step rule3d44_sweep "${GP[@]}" sweep h6 h8 h9 h11 h12 h13 plan --dtype fp16,bf16 --shapes 1000x1000x1000 --interleave \
  --run-option --no-energy --budget 1 --out-dir "$B/rule3d44/sweep"
TMA3=(--param BN=80 --param CLUSTER_M=2 --param STAGES=7)
for run in fp16:1000x960x1496 bf16:900x1100x1000 fp16:1000x900x520; do
  IFS=: read -r dt shape <<<"$run"; IFS=x read -r m n k <<<"$shape"
  step "rule3d44_tma_${dt}_$shape" "${GP[@]}" run plan h8 "${TMA3[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" \
    --interleave --budget 1 --max-reps 8000 -o "$B/rule3d44/run_tma_${dt}_$shape.json"
done
W72=(--param BN=72 --param CLUSTER_M=2 --param STAGES=8 --param EPI_DIRECT=1)
for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x1000x2000 fp16:1000x960x1496; do
  IFS=: read -r dt shape <<<"$run"; IFS=x read -r m n k <<<"$shape"
  step "rule3d44_w72_${dt}_$shape" "${GP[@]}" run plan h8 "${W72[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" \
    --interleave --budget 1 --max-reps 8000 -o "$B/rule3d44/run_w72_${dt}_$shape.json"
done
