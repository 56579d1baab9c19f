# stage ladder
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step ladder "${GP[@]}" run --all --size "$SIZE" -o "$B/ladder_$SIZE.json"
