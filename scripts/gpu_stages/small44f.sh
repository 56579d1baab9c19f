# stage small44f: h8 at 128 x 80 tiles (BN=80, 7 stages) in 2 x 2 clusters at 1000^3: 28 clusters of 4, which the H200 holds at once (30), each CTA reading 13 KiB per k-tile (pairs of 128 x 64: 16); verified at edge shapes, timed beside the plan and cuBLAS in turns (1000^3 fp16 and bf16, pairs alone at 128 x 80 as the control, 1024^3); ncu at 1000^3
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44f"
P80=(--param BN=80 --param STAGES=7)
for shape in 600x1000x1000 1000x900x520 300x520x136; do
  IFS=x read -r m n k <<<"$shape"
  step "small44f_check_$shape" "${GP[@]}" run h8 "${P80[@]}" --param CLUSTER_M=2 --param CLUSTER_N=2 --dtype fp16 \
    -m "$m" -n "$n" -k "$k" --alpha 1.5 --beta -0.5 --budget 0.05 --max-reps 10 --no-cublas \
    -o "$B/small44f/check_$shape.json"
done
for run in "fp16 1000 CLUSTER_M=2" "bf16 1000 CLUSTER_M=2" "fp16 1000 CLUSTER_N=2" "fp16 1024 CLUSTER_M=2,CLUSTER_N=2"; do
  read -r dtype size params <<<"$run"
  args=("${P80[@]}"); for p in ${params//,/ }; do args+=(--param "$p"); done
  step "small44f_run_${dtype}_${size}_${params//,/_}" "${GP[@]}" run plan h8 "${args[@]}" --dtype "$dtype" \
    --size "$size" --interleave --budget 0.5 -o "$B/small44f/run_${dtype}_${size}_${params//,/_}.json"
done
step small44f_ncu_1000 "${GP[@]}" profile h8 "${P80[@]}" --param CLUSTER_M=2 --dtype fp16 --size 1000 \
  --save "$B/small44f/profile_1000.json"
