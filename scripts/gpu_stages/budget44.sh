# stage budget44: does the time per variant decide h9 against h12 at long K? plan (h12 there), h9 and h12 beside cuBLAS in turns at 8192^3 and 16384 x 4096 x 14336, fp16, at the sweep's 0.3 s per variant and at 1 s, alternately
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/budget44"
for budget in 0.3 1 0.3; do
  for shape in 8192x8192x8192 16384x4096x14336; do
    IFS=x read -r m n k <<<"$shape"
    step "budget44_${shape}_$budget" "${GP[@]}" run plan h9 h12 --dtype fp16 -m "$m" -n "$n" -k "$k" --interleave \
      --budget "$budget" --max-reps 4000 --no-energy -o "$B/budget44/run_fp16_${shape}_$budget.json"
  done
done
