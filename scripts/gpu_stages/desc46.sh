# stage desc46: experiment: h8 with its consumers' wgmma descriptors made once and advanced by addition (H8_DESC_ONCE=1) beside the plan and cuBLAS in turns at 1024^3 (twice) and 1000^3 (rule 3's tiles), fp16; verified at two edge shapes
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/desc46"
step desc46_check_split "${GP[@]}" run h8 --param H8_DESC_ONCE=1 --dtype fp16 -m 150 -n 1000 -k 4096 --alpha 1.5 \
  --beta -0.5 --budget 0.05 --max-reps 10 --no-cublas -o "$B/desc46/check_150x1000x4096.json"
for run in 1024:a 1024:b 1000:a; do
  IFS=: read -r size rep <<<"$run"
  extra=(); [ "$size" = 1000 ] && extra=(--param BN=80 --param CLUSTER_M=2 --param STAGES=7)
  step "desc46_run_${size}_$rep" "${GP[@]}" run plan h8 "${extra[@]}" --param H8_DESC_ONCE=1 --dtype fp16 \
    --size "$size" --interleave --budget 0.5 -o "$B/desc46/run_${size}_$rep.json"
done
