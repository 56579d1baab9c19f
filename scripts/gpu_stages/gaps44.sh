# stage gaps44: the shapes furthest below cuBLAS in 2026-11-29_h200_sweep44: the small squares (h8 and h13 tuned at 1024^3, random, a minute each; plan, h8 and h13 beside cuBLAS in turns at 1000^3 and 1024^3), 128 rows with a long K (h11 tuned at 128 x 4096 x 14336), and ncu on the plan's rung beside cuBLAS at 1024^3, 128 x 4096 x 14336 and 16 x 4096 x 4096 (what cuBLAS launches there, and what limits each)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). The tune caches stay on the device; the results files
# (-o) and the runs come back. Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/gaps44"
for rung in h8 h13; do
  step "gaps44_tune_${rung}_1024" timeout 100 "${GP[@]}" tune "$rung" --size 1024 --strategy random \
    --budget-minutes 1 --top 3 -o "$B/gaps44/tune_${rung}_1024.json"
done
step gaps44_tune_h11_128x4096x14336 timeout 100 "${GP[@]}" tune h11 -m 128 -n 4096 -k 14336 --strategy random \
  --budget-minutes 1 --top 3 -o "$B/gaps44/tune_h11_128x4096x14336.json"
for size in 1000 1024; do
  step "gaps44_run_$size" "${GP[@]}" run plan h8 h13 --dtype fp16 --size "$size" --interleave --budget 0.5 \
    -o "$B/gaps44/run_$size.json"
done
for shape in 1024x1024x1024 128x4096x14336 16x4096x4096; do
  IFS=x read -r m n k <<<"$shape"
  step "gaps44_ncu_$shape" "${GP[@]}" profile plan --dtype fp16 -m "$m" -n "$n" -k "$k" --cublas \
    --save "$B/gaps44/profile_$shape.json"
done
