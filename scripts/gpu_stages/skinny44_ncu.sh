# stage skinny44_ncu: Nsight Compute's view of h11 at 16 x 11008 x 4096 (fp16) before and after its shared ring (SHARED_STAGES=0: 16 stages, one CTA per SM, two waves; the default: 8 stages, two CTAs per SM, one wave), cuBLAS beside it
# sourced by scripts/gpu_batch.sh (step, GP, B come from there)
mkdir -p "$B/skinny44_ncu"
for shared in 0 8; do
  step "skinny44_ncu_s$shared" "${GP[@]}" profile h11 --param "SHARED_STAGES=$shared" --dtype fp16 -m 16 -n 11008 -k 4096 \
    --cublas --save "$B/skinny44_ncu/profile_s$shared.json" --save-csv "$B/skinny44_ncu/ncu_s$shared.csv"
done
