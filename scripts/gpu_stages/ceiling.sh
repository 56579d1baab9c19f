# stage ceiling: gemmprof ceiling (fp32, tf32, fp16, bf16 cuBLAS at 4096 and 8192, and a DRAM copy; burst, then sustained) into a store of its own; gpus, roofline and explain reading it; the GPU test (about 2 minutes)
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
CEIL=(env GEMMPROF_DATA="$B/ceiling_data")  # the store comes back in the tarball; other stages do not read it
STEP_TIMEOUT=${STEP_TIMEOUT:-300} step ceiling "${CEIL[@]}" "${GP[@]}" ceiling --shapes "${CEILING_SHAPES:-4096,8192}" -o "$B/ceiling.json"
step ceiling_gpus "${CEIL[@]}" "${GP[@]}" gpus h200
if [ -f "$B/sustained_8192.json" ]; then  # the final stage's h12 at 8192, sustained: its roofline and explain
  step ceiling_roofline "${CEIL[@]}" "${GP[@]}" roofline "$B/sustained_8192.json" -o "$B/ceiling_roofline.png" --table "$B/ceiling_roofline.json"
  step ceiling_explain "${CEIL[@]}" "${GP[@]}" explain h12 --dtype fp16 --size 8192 --results "$B/sustained_8192.json" -o "$B/ceiling_explain.json"
else
  step ceiling_roofline "${CEIL[@]}" "${GP[@]}" roofline --model-only h4-h13 --dtype fp16 --size 8192 --gpu h200 -o "$B/ceiling_roofline.png" --table "$B/ceiling_roofline.json"
fi
step ceiling_test "${CEIL[@]}" python3 -m pytest -q -m gpu tests/test_ceiling.py
