# stage fp16
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step fp16_8192 "${GP[@]}" run --all --dtype fp16 --size 8192 -o "$B/fp16_8192.json"
