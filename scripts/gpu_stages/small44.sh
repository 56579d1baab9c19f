# stage small44: 1000^3, the built-in sweep's lowest shape: ncu on the plan's rung (h8 in pairs) beside cuBLAS with PC sampling, fp16; h8 beside the plan in turns with one parameter moved (L2 promotion, pairs, stages); h8 tuned there (random, a minute)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44"
step small44_ncu_1000 "${GP[@]}" profile plan --dtype fp16 --size 1000 --cublas --pc-sampling \
  --save "$B/small44/profile_1000.json" --save-csv "$B/small44/profile_1000.csv"
for p in L2_PROMOTION=256 L2_PROMOTION=0 CLUSTER_N=1 STAGES=4; do
  step "small44_run_1000_$p" "${GP[@]}" run plan h8 --param "$p" --dtype fp16 --size 1000 --interleave --budget 0.5 \
    -o "$B/small44/run_1000_$p.json"
done
step small44_tune_h8_1000 timeout 100 "${GP[@]}" tune h8 --size 1000 --strategy random --budget-minutes 1 --top 3 \
  -o "$B/small44/tune_h8_1000.json"
