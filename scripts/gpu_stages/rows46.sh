# stage rows46: h8's skinny 64 x 64 tiles at 128 rows in clusters that share an operand by multicast (2 x 1 along M sharing B; 1 x 2 along N sharing A; 2 x 1 with a 12-stage ring) beside the plan and cuBLAS in turns, fp16, at three 128-row shapes of the built-in sweep
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rows46"
for shape in 128x4096x4096 128x4096x11008 128x11008x4096; do
  IFS=x read -r m n k <<<"$shape"
  for v in CLUSTER_M=2 CLUSTER_N=2 CLUSTER_M=2,STAGES=12; do
    params=(); IFS=, read -ra kv <<<"$v"; for p in "${kv[@]}"; do params+=(--param "$p"); done
    step "rows46_run_${shape}_$v" "${GP[@]}" run plan h8 "${params[@]}" --dtype fp16 -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 -o "$B/rows46/run_${shape}_$v.json"
  done
done
