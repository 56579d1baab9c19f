# stage lead46: experiment: the plan beside cuBLAS at 1000^3 and 128 x 4096 x 4096 (fp16) with the L2 flush followed by a device-side wait of 0 and 50 us before each timed call's start event (scripts/lead_check.py): does the device wait on the host inside the timed interval?
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/lead46"
for shape in 1000x1000x1000 128x4096x4096; do
  IFS=x read -r m n k <<<"$shape"
  for lead in 0 50; do
    step "lead46_${shape}_$lead" python3 scripts/lead_check.py "$lead" -- plan --dtype fp16 -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 -o "$B/lead46/run_${shape}_lead$lead.json"
  done
done
