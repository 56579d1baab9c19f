# stage exit46: h8 whose CTAs leave once their last TMA stores have read their buffers (EXIT_WAIT_READ=1, experiment) beside the plan and cuBLAS in turns at 1024^3 (h8's defaults, rule 4) and 1000^3 (rule 3's tiles and clusters), fp16 twice each and bf16
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/exit46"
R3=(--param BN=80 --param CLUSTER_M=2 --param STAGES=7)
for run in fp16:1024:a fp16:1024:b bf16:1024:a fp16:1000:a fp16:1000:b bf16:1000:a; do
  IFS=: read -r dtype size rep <<<"$run"
  extra=(); [ "$size" = 1000 ] && extra=("${R3[@]}")
  step "exit46_run_${dtype}_${size}_$rep" "${GP[@]}" run plan h8 "${extra[@]}" --param EXIT_WAIT_READ=1 \
    --dtype "$dtype" --size "$size" --interleave --budget 0.5 -o "$B/exit46/run_${dtype}_${size}_$rep.json"
done
step exit46_check "${GP[@]}" run h8 --param EXIT_WAIT_READ=1 --dtype fp16 -m 4095 -n 4097 -k 1024 --budget 0.05 \
  --max-reps 10 --no-cublas -o "$B/exit46/check_4095x4097x1024.json"
