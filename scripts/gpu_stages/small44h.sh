# stage small44h: the plan at 1000^3 (rule 3: h8's 128 x 80 tiles in 2 x 2 clusters) beside h8 at its defaults (128 x 64 in pairs: rule 4) and cuBLAS in turns, fp16 and bf16
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/small44h"
for dtype in fp16 bf16; do
  step "small44h_run_${dtype}_1000" "${GP[@]}" run plan h8 --dtype "$dtype" --size 1000 --interleave --budget 0.5 \
    -o "$B/small44h/run_${dtype}_1000.json"
done
