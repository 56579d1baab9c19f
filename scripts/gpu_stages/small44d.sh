# stage small44d: h13 with clusters of 4 only where they all fit at once (QUADS_AT_ONCE): the plan (now KS = 2) beside h13 in clusters of 4 (QUADS_AT_ONCE=33) and cuBLAS in turns at 512 x 1024 x 8192 and 128 x 4096 x 4096; h13's clusters of 4 verified where they fit (128 and 16 x 3840 x 4096); the GPU tests of h8's and h13's clusters
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44d"
for shape in 512x1024x8192 128x4096x4096; do
  IFS=x read -r m n k <<<"$shape"
  step "small44d_run_$shape" "${GP[@]}" run plan h13 --param QUADS_AT_ONCE=33 --dtype fp16 -m "$m" -n "$n" -k "$k" \
    --interleave --budget 0.4 -o "$B/small44d/run_$shape.json"
done
step small44d_run_h13_128x3840x4096 "${GP[@]}" run plan h13 --dtype fp16 -m 128 -n 3840 -k 4096 --interleave \
  --budget 0.3 -o "$B/small44d/run_128x3840x4096.json"
step small44d_pytest python3 -m pytest -q -p no:cacheprovider tests/test_hopper_split_k.py \
  tests/test_hopper_cluster_split_k.py -k "gpu"
