# stage gaps44c: h8's split launches in pairs along N sharing A (as cuBLAS's split-K kernel at 128 rows runs; new here): plan and h8 with 128 x 64 tiles in pairs beside cuBLAS in turns at 128 x 4096 x {14336, 11008, 4096}; h12 tuned at 1024 x 11008 x 4096 and 4096 x 14336 x 4096 (96-97% of cuBLAS in 2026-11-29_h200_sweep44)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/gaps44c"
for k in 14336 11008 4096; do
  step "gaps44c_run_128x4096x$k" "${GP[@]}" run plan h8 --param SKINNY_CONSUMERS=2 --param CLUSTER_N=2 --dtype fp16 \
    -m 128 -n 4096 -k "$k" --interleave --budget 0.5 -o "$B/gaps44c/run_128x4096x$k.json"
done
for shape in 1024x11008x4096 4096x14336x4096; do
  IFS=x read -r m n k <<<"$shape"
  step "gaps44c_tune_h12_$shape" timeout 100 "${GP[@]}" tune h12 -m "$m" -n "$n" -k "$k" --strategy random \
    --budget-minutes 0.75 --top 3 -o "$B/gaps44c/tune_h12_$shape.json"
done
