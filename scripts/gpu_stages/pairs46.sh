# stage pairs46: h12 in pairs sharing B at fitted widths off 16 rows (B's box in two pieces overlapping by one atom: 168 x 128 tiles in 1 x 2 clusters, cuBLAS's decomposition at 1024 x 11008 x 4096) beside the plan (h12 alone there) and cuBLAS in turns, fp16 and bf16, at the sweep's two fitted-width shapes and three LLM shapes; its GPU tests
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/pairs46"
for run in fp16:1024x11008x4096 bf16:1024x11008x4096 fp16:1024x14336x4096 bf16:1024x14336x4096 fp16:512x10240x8192 \
           fp16:3000x3584x18944 fp16:2048x5120x5120; do
  dtype=${run%%:*}; shape=${run#*:}; IFS=x read -r m n k <<<"$shape"
  step "pairs46_run_${dtype}_$shape" "${GP[@]}" run plan h12 --param CLUSTER_M=2 --dtype "$dtype" -m "$m" -n "$n" \
    -k "$k" --interleave --budget 1 --max-reps 2000 -o "$B/pairs46/run_${dtype}_$shape.json"
done
T=tests/test_hopper_tma_store.py
step pairs46_pytest python3 -m pytest -q -p no:cacheprovider -m gpu "$T::test_h12_fitted_widths_verify_on_the_gpu" \
  "$T::test_h12_widths_off_32_columns_verify_on_the_gpu[params2]" \
  "$T::test_h12_widths_off_32_columns_verify_on_the_gpu[params3]"
