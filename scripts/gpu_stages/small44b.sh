# stage small44b: h8 in clusters along M too (CLUSTER_M = 2: 2 x 2 with the pairs along N, 2 x 1 alone), verified at edge shapes (odd tile rows and columns, beta, split) and timed beside the plan (h8 in pairs or alone) and cuBLAS in turns at 1000^3 and 1024^3, fp16 and bf16; ncu on it at 1000^3
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44b"
for dtype in fp16 bf16; do
  for shape in 1000x900x520 600x1000x1000 4095x4097x1024 300x520x136 256x1024x8192 150x1000x4096; do
    IFS=x read -r m n k <<<"$shape"
    step "small44b_check_${dtype}_$shape" "${GP[@]}" run h8 --param CLUSTER_M=2 --param CLUSTER_N=2 --param SPLIT_MAX=2 \
      --dtype "$dtype" -m "$m" -n "$n" -k "$k" --alpha 1.5 --beta -0.5 --budget 0.05 --max-reps 10 --no-cublas \
      -o "$B/small44b/check_${dtype}_$shape.json"
  done
done
for run in "fp16 1000 CLUSTER_M=2" "bf16 1000 CLUSTER_M=2" "fp16 1024 CLUSTER_M=2" "fp16 1024 CLUSTER_M=2,CLUSTER_N=2" \
           "bf16 1024 CLUSTER_M=2,CLUSTER_N=2"; do
  read -r dtype size params <<<"$run"
  args=(); for p in ${params//,/ }; do args+=(--param "$p"); done
  step "small44b_run_${dtype}_${size}_${params//,/_}" "${GP[@]}" run plan h8 "${args[@]}" --dtype "$dtype" --size "$size" \
    --interleave --budget 0.5 -o "$B/small44b/run_${dtype}_${size}_${params//,/_}.json"
done
step small44b_ncu_1000 "${GP[@]}" profile h8 --param CLUSTER_M=2 --dtype fp16 --size 1000 \
  --save "$B/small44b/profile_1000.json"
