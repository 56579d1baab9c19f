# stage rows45: h13 with 128 x 64 tiles (BN=64: K split in two inside pairs, reduced on chip) beside the plan and cuBLAS in turns at the built-in sweep's 128-row shapes; h11 unsplit (SPLIT_MAX=1) beside the plan's split h11 at 16 rows
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rows45"
for run in "fp16 128x4096x4096" "fp16 128x4096x11008" "fp16 128x4096x14336" "fp16 128x11008x4096" \
           "bf16 128x4096x4096" "bf16 128x4096x14336"; do
  read -r dtype shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "rows45_h13bn64_${dtype}_$shape" "${GP[@]}" run plan h13 --param BN=64 --dtype "$dtype" -m "$m" -n "$n" \
    -k "$k" --interleave --budget 0.5 -o "$B/rows45/h13bn64_${dtype}_$shape.json"
done
for shape in 16x4096x4096 16x4096x14336; do
  IFS=x read -r m n k <<<"$shape"
  step "rows45_h11unsplit_fp16_$shape" "${GP[@]}" run plan h11 --param SPLIT_MAX=1 --dtype fp16 -m "$m" -n "$n" \
    -k "$k" --interleave --budget 0.5 -o "$B/rows45/h11unsplit_fp16_$shape.json"
done
for f in "$B"/rows45/*.json; do "${GP[@]}" show "$f" --format csv >"${f%.json}.csv" 2>&1; done
