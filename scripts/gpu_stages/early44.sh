# stage early44: experiment: h8 at rule 3's tile (128 x 80 in 2 x 2, 7 stages) with its first k-tiles loaded alone before the cluster barrier (EARLY_LOCAL=1, 2, 7) and its exit waiting only for the stores' reads (EXIT_READ=1); verified at edge shapes, then each beside the plan and cuBLAS in turns at 1000^3 fp16 (twice), bf16, 1000 x 1000 x 2000
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/early44"
step early44_verify python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/test_hopper_split_k.py -k "start_and_end_moved and early and fp16"
R3=(--param BN=80 --param CLUSTER_M=2 --param STAGES=7)
for v in exit:EXIT_READ=1 e1:EARLY_LOCAL=1 e2:EARLY_LOCAL=2 e7:EARLY_LOCAL=7 e2x:EARLY_LOCAL=2,EXIT_READ=1; do
  IFS=: read -r tag defs <<<"$v"
  extra=(); IFS=, read -ra ds <<<"$defs"; for d in "${ds[@]}"; do extra+=(--param "$d"); done
  for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x1000x2000; do
    IFS=: read -r dt shape <<<"$run"
    IFS=x read -r m n k <<<"$shape"
    step "early44_${tag}_${dt}_$shape" "${GP[@]}" run plan h8 "${R3[@]}" "${extra[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 --max-reps 4000 -o "$B/early44/run_${tag}_${dt}_$shape.json"
  done
done
