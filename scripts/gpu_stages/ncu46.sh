# stage ncu46: ncu at 128 x 4096 x 4096 fp16: the plan (h11) beside cuBLAS, and h8's skinny tiles alone and in pairs sharing A or B, to see why the pairs ran slower (L2 bytes, stalls)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/ncu46"
S=(--dtype fp16 -m 128 -n 4096 -k 4096)
step ncu46_plan "${GP[@]}" profile plan "${S[@]}" --cublas --save "$B/ncu46/profile_plan.json"
for v in CLUSTER_N=1 CLUSTER_N=2 CLUSTER_M=2; do
  step "ncu46_h8_$v" "${GP[@]}" profile h8 --param "$v" "${S[@]}" --save "$B/ncu46/profile_h8_$v.json"
done
