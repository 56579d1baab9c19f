# stage small44g: plan rule 3 (new: h8's 128 x 80 tiles in 2 x 2 clusters where rows are off 128-byte lines) on shapes it was not made on, beside h8 at its defaults (what the plan ran there before: 128 x 64 in pairs) and cuBLAS in turns
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44g"
for run in "fp16 1000x1000x2000" "bf16 900x1100x1000" "fp16 1000x960x1496" "fp16 1000x900x520"; do
  read -r dtype shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "small44g_run_${dtype}_$shape" "${GP[@]}" run plan h8 --dtype "$dtype" -m "$m" -n "$n" -k "$k" --interleave \
    --budget 0.5 -o "$B/small44g/run_${dtype}_$shape.json"
done
