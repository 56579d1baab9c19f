# stage odd
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step odd "${GP[@]}" run --all -m 4095 -n 4097 -k 1023 --budget 0.3 -o "$B/odd_4095x4097x1023.json"
