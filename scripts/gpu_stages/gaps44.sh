# stage gaps44: the shapes furthest below cuBLAS in 2026-11-29_h200_sweep44: the small squares (1000^3, 1024^3: h8 and h13 tuned at each, random, a minute each, then plan, h8 and h13 beside cuBLAS in turns, and ncu on the plan's rung beside cuBLAS) and 128 rows with a long K (128 x 4096 x 14336: h11 tuned, its ring, split and rows)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). The tune caches stay on the device; the results files
# (-o) and the runs come back. Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/gaps44"
for size in 1000 1024; do
  for rung in h8 h13; do
    step "gaps44_tune_${rung}_$size" timeout 100 "${GP[@]}" tune "$rung" --size "$size" --strategy random \
      --budget-minutes 1 --top 3 -o "$B/gaps44/tune_${rung}_$size.json"
  done
  step "gaps44_run_$size" "${GP[@]}" run plan h8 h13 --dtype fp16 --size "$size" --interleave --budget 0.5 \
    -o "$B/gaps44/run_$size.json"
  step "gaps44_ncu_$size" "${GP[@]}" profile plan --dtype fp16 --size "$size" --cublas \
    --save "$B/gaps44/profile_$size.json"
done
step gaps44_tune_h11_128x4096x14336 timeout 100 "${GP[@]}" tune h11 -m 128 -n 4096 -k 14336 --strategy random \
  --budget-minutes 1 --top 3 -o "$B/gaps44/tune_h11_128x4096x14336.json"
