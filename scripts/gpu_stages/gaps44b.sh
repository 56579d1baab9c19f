# stage gaps44b: 128 rows (N = 4096; K = 4096, 11008, 14336), where cuBLAS splits K in two over 128 x 64 tiles (2026-11-29 ncu) and h11 splits none: h8 tuned at each (its skinny tile up to 128 x 128, its split), kept, then plan (h11) and the kept h8 beside cuBLAS in turns; h11 tuned at 16 x 4096 x 4096
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). `tune --keep` makes the winner h8's defaults on the
# device for the `run` that follows it (plan runs its rules' parameters). Set DEADLINE to skip what would not fit.
mkdir -p "$B/gaps44b"
for k in 14336 11008 4096; do
  step "gaps44b_tune_h8_128x4096x$k" timeout 100 "${GP[@]}" tune h8 -m 128 -n 4096 -k "$k" --strategy random \
    --budget-minutes 0.75 --top 3 --keep -o "$B/gaps44b/tune_h8_128x4096x$k.json"
  step "gaps44b_run_128x4096x$k" "${GP[@]}" run plan h8 --dtype fp16 -m 128 -n 4096 -k "$k" --interleave \
    --budget 0.5 -o "$B/gaps44b/run_128x4096x$k.json"
done
step gaps44b_tune_h11_16x4096x4096 timeout 100 "${GP[@]}" tune h11 -m 16 -n 4096 -k 4096 --strategy random \
  --budget-minutes 0.75 --top 3 -o "$B/gaps44b/tune_h11_16x4096x4096.json"
