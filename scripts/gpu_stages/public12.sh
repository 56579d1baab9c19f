# stage public12: the best public hand-written Hopper kernel (fast.cu's kernel 12, examples/public_fastcu12) verified and timed beside h12 and cuBLAS (bf16 and fp32 C), interleaved, at 4096 and 8192
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step public12_tests python3 -m pytest -q -m gpu tests/test_examples.py -k public
for s in 4096 8192; do
  step "public12_$s" "${GP[@]}" run h12 --dtype bf16 --spec examples/public_fastcu12/fastcu12.yaml --size "$s" --interleave -o "$B/public12_$s.json"
done
