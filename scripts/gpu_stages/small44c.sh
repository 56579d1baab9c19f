# stage small44c: clusters that do not all fit at once (the run's new note, from the driver's occupancy calculator): h8 in 2 x 2 clusters at 1000^3; h13 splitting K over clusters of 4 (the plan's rung at 512 x 1024 x 8192) beside clusters of 2 (KS_MAX=2) and cuBLAS in turns; the pairs of h7, h9 and h12 on their persistent grids at 4096^3
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44c"
step small44c_h8_2x2_1000 "${GP[@]}" run h8 --param CLUSTER_M=2 --dtype fp16 --size 1000 --budget 0.05 --no-cublas \
  -o "$B/small44c/h8_2x2_1000.json"
step small44c_h13_512x1024x8192 "${GP[@]}" run plan h13 --param KS_MAX=2 --dtype fp16 -m 512 -n 1024 -k 8192 \
  --interleave --budget 0.4 -o "$B/small44c/h13_512x1024x8192.json"
step small44c_pairs_4096 "${GP[@]}" run h7 h9 h12 --dtype fp16 --size 4096 --budget 0.05 --no-cublas \
  -o "$B/small44c/pairs_4096.json"
