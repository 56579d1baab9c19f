# stage smallsq44: the small squares below 90% of cuBLAS on the H200 (1000^3, 1024^3): h8 and h13 tuned at each (random, a minute each), then the plan, h8 and h13 beside cuBLAS in turns, and ncu on the plan's rung beside cuBLAS
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). The tune caches stay on the device; the results files
# (-o) and the runs come back. Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/smallsq44"
for size in 1000 1024; do
  for rung in h8 h13; do
    step "smallsq44_tune_${rung}_$size" timeout 100 "${GP[@]}" tune "$rung" --size "$size" --strategy random \
      --budget-minutes 1 --top 3 -o "$B/smallsq44/tune_${rung}_$size.json"
  done
  step "smallsq44_run_$size" "${GP[@]}" run plan h8 h13 --dtype fp16 --size "$size" --interleave --budget 0.5 \
    -o "$B/smallsq44/run_$size.json"
  step "smallsq44_ncu_$size" "${GP[@]}" profile plan --dtype fp16 --size "$size" --cublas \
    --save "$B/smallsq44/profile_$size.json"
done
