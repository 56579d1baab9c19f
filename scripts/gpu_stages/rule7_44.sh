# stage rule7_44: the plan's rule 7 (h9 at 4096 rows or more and past eight waves of 128 x 128 tiles) beside h12 and cuBLAS in turns at shapes the rule was not made on (the H100 records' two it takes, an LLM MLP layer), fp16, 1 s per variant
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rule7_44"
for shape in ${RULE7_SHAPES:-6144x6144x6144 8192x4096x14336 4096x28672x4096}; do
  IFS=x read -r m n k <<<"$shape"
  step "rule7_44_$shape" "${GP[@]}" run plan h12 --dtype fp16 -m "$m" -n "$n" -k "$k" --interleave --budget 1 \
    --max-reps 4000 -o "$B/rule7_44/run_fp16_$shape.json"
done
