# stage steady46: the plan beside cuBLAS in turns at four power-capped shapes of the built-in sweep (fp16; two bf16), with a budget of 2 s per variant (the sweep's is 0.3 s): the gap at the same capped clock, with less noise than one sweep's row
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/steady46"
for run in fp16:4096x4096x16384 fp16:16384x14336x4096 fp16:4096x4096x4096 fp16:1024x14336x4096 bf16:4096x4096x16384 \
           bf16:1024x11008x4096; do
  dtype=${run%%:*}; shape=${run#*:}; IFS=x read -r m n k <<<"$shape"
  step "steady46_run_${dtype}_$shape" "${GP[@]}" run plan --dtype "$dtype" -m "$m" -n "$n" -k "$k" --interleave \
    --budget 2 --max-reps 4000 -o "$B/steady46/run_${dtype}_$shape.json"
done
