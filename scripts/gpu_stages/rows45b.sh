# stage rows45b: h11 unsplit (SPLIT_MAX=1) beside the plan's split h11 and cuBLAS in turns at 1-16 rows with 16-64 tiles; h13's 128 x 64 tiles in pairs (BN=64) beside the plan at 65-128-row shapes rows45 did not run
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rows45b"
for run in "fp16 16x4096x4096" "bf16 16x4096x4096" "fp16 16x4096x11008" "bf16 16x4096x14336" "fp16 8x4096x4096" \
           "fp16 1x4096x4096" "fp16 16x2048x4096" "fp16 16x1024x8192" "bf16 4x3584x3584"; do
  read -r dtype shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "rows45b_h11unsplit_${dtype}_$shape" "${GP[@]}" run plan h11 --param SPLIT_MAX=1 --dtype "$dtype" -m "$m" \
    -n "$n" -k "$k" --interleave --budget 0.5 -o "$B/rows45b/h11unsplit_${dtype}_$shape.json"
done
for run in "fp16 96x3584x18944" "fp16 128x3584x18944" "fp16 80x4096x4096" "fp16 128x2048x8192" "fp16 128x4096x8192" \
           "fp16 128x3584x3584" "bf16 96x3584x18944" "bf16 112x4096x11008"; do
  read -r dtype shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "rows45b_h13bn64_${dtype}_$shape" "${GP[@]}" run plan h13 --param BN=64 --dtype "$dtype" -m "$m" -n "$n" \
    -k "$k" --interleave --budget 0.5 -o "$B/rows45b/h13bn64_${dtype}_$shape.json"
done
for f in "$B"/rows45b/*.json; do "${GP[@]}" show "$f" --format csv >"${f%.json}.csv" 2>&1; done
