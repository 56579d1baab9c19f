# stage rows45c: the plan (h11 unsplit at 64 tiles since SPLIT_WAVE_PART) beside h11 split as before (SPLIT_WAVE_PART=1) and cuBLAS in turns at the built-in sweep's 16-row shapes, fp16 and bf16
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rows45c"
for run in "bf16 16x4096x11008" "fp16 16x4096x4096" "bf16 16x4096x14336"; do
  read -r dtype shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "rows45c_${dtype}_$shape" "${GP[@]}" run plan h11 --param SPLIT_WAVE_PART=1 --dtype "$dtype" -m "$m" -n "$n" \
    -k "$k" --interleave --budget 0.5 -o "$B/rows45c/run_${dtype}_$shape.json"
done
for f in "$B"/rows45c/*.json; do "${GP[@]}" show "$f" --format csv >"${f%.json}.csv" 2>&1; done
