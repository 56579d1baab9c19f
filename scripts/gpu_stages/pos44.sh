# stage pos44: experiment: h8 at rule 3's tile (128 x 80 in 2 x 2, 7 stages) with its ring position carried (RING_POS=1), with a suspend-time hint in its waits (MBAR_SUSPEND_NS), and both; verified at edge shapes, then each beside the plan and cuBLAS in turns where rule 3 applies
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/pos44"
step pos44_verify python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/test_hopper_split_k.py -k "ring_position_carried and fp16"
R3=(--param BN=80 --param CLUSTER_M=2 --param STAGES=7)
for v in pos:RING_POS=1 hint:MBAR_SUSPEND_NS=10000000 both:RING_POS=1,MBAR_SUSPEND_NS=10000000; do
  IFS=: read -r tag defs <<<"$v"
  extra=(); IFS=, read -ra ds <<<"$defs"; for d in "${ds[@]}"; do extra+=(--param "$d"); done
  for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x1000x2000 fp16:1000x960x1496; do
    IFS=: read -r dt shape <<<"$run"
    IFS=x read -r m n k <<<"$shape"
    step "pos44_${tag}_${dt}_$shape" "${GP[@]}" run plan h8 "${R3[@]}" "${extra[@]}" --dtype "$dt" -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 --max-reps 4000 -o "$B/pos44/run_${tag}_${dt}_$shape.json"
  done
done
