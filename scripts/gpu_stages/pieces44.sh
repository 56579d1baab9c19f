# stage pieces44: experiment: h8's 128 x 72 tiles in 2 x 2 clusters (B's box in two pieces of 40 rows, overlapping) verified at edge shapes, then beside the plan (rule 3: 128 x 80 in 2 x 2) and cuBLAS in turns where rule 3 applies
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/pieces44"
step pieces44_verify python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/test_hopper_split_k.py \
  -k "b_in_pieces and (tile1 or tile2)"
P72=(--param BN=72 --param CLUSTER_M=2 --param STAGES=7)
for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x1000x2000 fp16:1000x960x1496; do
  IFS=: read -r dt shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "pieces44_${dt}_$shape" "${GP[@]}" run plan h8 "${P72[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" \
    --interleave --budget 0.5 --max-reps 4000 -o "$B/pieces44/run_${dt}_$shape.json"
done
