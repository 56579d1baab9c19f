# stage deep46: h8's skinny 64 x 64 tiles with a 13-stage ring (cuBLAS's depth at 128 x 4096 x 4096), alone and in pairs sharing B, beside the plan and cuBLAS in turns at three 128-row shapes (fp16)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/deep46"
for shape in 128x4096x4096 128x4096x11008 128x11008x4096; do
  IFS=x read -r m n k <<<"$shape"
  for cm in 1 2; do
    step "deep46_${shape}_cm$cm" "${GP[@]}" run plan h8 --param STAGES=13 --param CONSUMERS=1 --param CLUSTER_M="$cm" \
      --dtype fp16 -m "$m" -n "$n" -k "$k" --interleave --budget 0.5 -o "$B/deep46/run_${shape}_cm$cm.json"
  done
done
