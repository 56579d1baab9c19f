# stage ring44: experiment: h8 with the epilogue's buffers in the ring (EPI_IN_RING=1), room for an eighth stage at rule 3's 128 x 80 tiles (a ninth at 128 x 64), beside the plan and cuBLAS in turns; verified first at edge shapes
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/ring44"
R3=(--param BN=80 --param CLUSTER_M=2 --param STAGES=8 --param EPI_IN_RING=1)
for check in "600 1000 1000 0" "300 520 136 -0.5" "1000 900 520 0"; do  # one unit per CTA; beta != 0 stages rows
  read -r m n k beta <<<"$check"
  step "ring44_check_${m}x${n}x$k" "${GP[@]}" run h8 "${R3[@]}" --dtype fp16 -m "$m" -n "$n" -k "$k" --alpha 1.5 \
    --beta "$beta" --no-cublas --regime burst --budget 0.05 --max-reps 10 -o "$B/ring44/check_${m}x${n}x$k.json"
done
for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x1000x2000 fp16:1000x960x1496; do
  IFS=: read -r dt shape <<<"$run"
  IFS=x read -r m n k <<<"$shape"
  step "ring44_${dt}_$shape" "${GP[@]}" run plan h8 "${R3[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" --interleave \
    --budget 0.5 --max-reps 4000 -o "$B/ring44/run_${dt}_$shape.json"
done
step ring44_fp16_1024 "${GP[@]}" run plan h8 --param STAGES=9 --param EPI_IN_RING=1 --dtype fp16 --size 1024 \
  --interleave --budget 0.5 --max-reps 4000 -o "$B/ring44/run_fp16_1024x1024x1024.json"
step ring44_fp16_1000_bn64 "${GP[@]}" run plan h8 --param CLUSTER_M=2 --param STAGES=9 --param EPI_IN_RING=1 \
  --dtype fp16 --size 1000 --interleave --budget 0.5 --max-reps 4000 -o "$B/ring44/run_fp16_1000_bn64.json"
