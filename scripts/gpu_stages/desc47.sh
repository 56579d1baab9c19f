# stage desc47: experiment: h6, h11, h12, h13 with their consumers' wgmma descriptors made once (DESC_ONCE=1) beside the plan (the same rung as it is) and cuBLAS in turns, fp16; 128-row shapes at 0.5 s, power-capped shapes at 2 s
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
# DESC47_PART=small|large|all (default all); DESC47_SMALL, DESC47_LARGE: RUNG:MxNxK lists instead; DESC47_DTYPE.
mkdir -p "$B/desc47"
if [ "${DESC47_PART:-all}" != large ]; then
  for run in ${DESC47_SMALL:-h11:128x4096x4096 h13:128x11008x4096 h11:128x4096x11008 h11:16x4096x14336 h12:128x14336x4096}; do
    IFS=: read -r rung shape <<<"$run"
    IFS=x read -r m n k <<<"$shape"
    step "desc47_${rung}_$shape" "${GP[@]}" run plan "$rung" --param DESC_ONCE=1 --dtype "${DESC47_DTYPE:-fp16}" -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 -o "$B/desc47/run_${rung}_${shape}_${DESC47_DTYPE:-fp16}_${DESC47_TAG:-a}.json"
  done
fi
if [ "${DESC47_PART:-all}" != small ]; then
  for run in ${DESC47_LARGE:-h12:4096x4096x4096 h6:1024x4096x11008 h12:1024x11008x4096}; do
    IFS=: read -r rung shape <<<"$run"
    IFS=x read -r m n k <<<"$shape"
    step "desc47_${rung}_$shape" "${GP[@]}" run plan "$rung" --param DESC_ONCE=1 --dtype "${DESC47_DTYPE:-fp16}" -m "$m" -n "$n" -k "$k" \
      --interleave --budget 2 --max-reps 4000 -o "$B/desc47/run_${rung}_${shape}_${DESC47_DTYPE:-fp16}_${DESC47_TAG:-a}.json"
  done
fi
