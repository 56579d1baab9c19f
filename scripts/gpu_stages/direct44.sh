# stage direct44: experiment: h8 with every epilogue from the registers (EPI_DIRECT=1, no staging buffers) at rule 3's tile (128 x 80 in 2 x 2) with 7 and 8 stages, and at the fitted width 128 x 72 in 2 x 2 (7 stages, and 8 with EPI_DIRECT); verified at edge shapes, then each beside the plan and cuBLAS in turns at 1000^3 fp16 and bf16 and 1000 x 1000 x 2000
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/direct44"
step direct44_verify python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/test_hopper_split_k.py -k "start_and_end_moved and epi_direct and fp16"
for v in d7:BN=80,STAGES=7,EPI_DIRECT=1 d8:BN=80,STAGES=8,EPI_DIRECT=1 w72:BN=72,STAGES=7 w72d8:BN=72,STAGES=8,EPI_DIRECT=1; do
  IFS=: read -r tag defs <<<"$v"
  extra=(--param CLUSTER_M=2); IFS=, read -ra ds <<<"$defs"; for d in "${ds[@]}"; do extra+=(--param "$d"); done
  for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x1000x2000; do
    IFS=: read -r dt shape <<<"$run"
    IFS=x read -r m n k <<<"$shape"
    step "direct44_${tag}_${dt}_$shape" "${GP[@]}" run plan h8 "${extra[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 --max-reps 4000 -o "$B/direct44/run_${tag}_${dt}_$shape.json"
  done
done
