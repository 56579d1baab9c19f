# stage skinny44: h11 at 16 rows where its tiles take two waves (16 x 11008 and 16 x 14336 x 4096, fp16): its default ring (16 stages, one CTA per SM) against 8 stages (two CTAs per SM, the tiles in one wave), each beside cuBLAS in turns
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/skinny44"
for shape in 16x11008x4096 16x14336x4096; do
  IFS=x read -r m n k <<<"$shape"
  for stages in 16 8; do
    step "skinny44_${shape}_s$stages" "${GP[@]}" run h11 --param "STAGES=$stages" --dtype fp16 -m "$m" -n "$n" -k "$k" \
      --interleave --budget 0.5 -o "$B/skinny44/${shape}_s$stages.json"
  done
done
