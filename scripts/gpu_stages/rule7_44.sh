# stage rule7_44: the plan's rule 7 (h9 at 4096 rows or more past 18 waves of 128 x 128 tiles) beside h9, h12 and cuBLAS in turns at LLM shapes the rule was not made on, and at the two sweep shapes where the plan's row ran h12 before the rule, fp16, 1 s per variant
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rule7_44"
for shape in ${RULE7_SHAPES:-8192x28672x8192 16384x5120x13824 6144x8192x8192 8192x8192x8192 16384x4096x14336}; do
  IFS=x read -r m n k <<<"$shape"
  step "rule7_44_$shape" "${GP[@]}" run plan h9 h12 --dtype fp16 -m "$m" -n "$n" -k "$k" --interleave --budget 1 \
    --max-reps 4000 -o "$B/rule7_44/run_fp16_$shape.json"
done
