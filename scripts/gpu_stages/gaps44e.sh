# stage gaps44e: h11's shared ring (two CTAs per SM) at rows of 64 and 32 whose tiles take more than one wave (STAGES=6: 97 KiB at rows of 64; STAGES=8: 97 KiB at rows of 32), beside plan (h11's one-CTA ring) and cuBLAS in turns: 64 x 10240 x 8192 (80.6% in 2026-11-29_h200_gaps44), 64 x 14336 x 4096, 32 x 27648 x 5120 (fp16 93.4%, bf16 89.5%)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/gaps44e"
for run in "fp16 64x10240x8192 6" "fp16 64x14336x4096 6" "fp16 32x27648x5120 8" "bf16 32x27648x5120 8"; do
  read -r dtype shape stages <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "gaps44e_run_${dtype}_$shape" "${GP[@]}" run plan h11 --param STAGES="$stages" --dtype "$dtype" -m "$m" -n "$n" \
    -k "$k" --interleave --budget 0.5 -o "$B/gaps44e/run_${dtype}_$shape.json"
done
