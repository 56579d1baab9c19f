# stage fp8_turns: h14 beside cuBLASLt fp8 (e4m3, bf16 C, per-tensor scales) timed in turns (--interleave) at 4096 and 8192x8192x4096, twice each; sustained regime
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
for i in 1 2; do
  step "fp8_turns_4096_$i" "${GP[@]}" run h14 --dtype e4m3 --c-dtype bf16 --scales tensor --size 4096 --interleave --budget 2 -o "$B/fp8_turns_4096_$i.json"
  step "fp8_turns_8192x8192x4096_$i" "${GP[@]}" run h14 --dtype e4m3 --c-dtype bf16 --scales tensor -m 8192 -n 8192 -k 4096 --interleave --budget 2 -o "$B/fp8_turns_8192x8192x4096_$i.json"
done
