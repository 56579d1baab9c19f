# stage shared44: h11's shared ring (two CTAs per SM wherever its tiles take more than one wave) as the plan runs it, beside h11 with the one-CTA ring (SHARED_STAGES=0) and cuBLAS in turns: 64 x 10240 x 8192 fp16, 32 x 152064 x 5120 fp16 (18 waves of tiles), 48 x 57344 x 8192 bf16 (Llama 3 70B's gate_up at 48 tokens)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/shared44"
for run in "fp16 64x10240x8192" "fp16 32x152064x5120" "bf16 48x57344x8192"; do
  read -r dtype shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "shared44_run_${dtype}_$shape" "${GP[@]}" run plan h11 --param SHARED_STAGES=0 --dtype "$dtype" -m "$m" -n "$n" \
    -k "$k" --interleave --budget 0.5 -o "$B/shared44/run_${dtype}_$shape.json"
done
