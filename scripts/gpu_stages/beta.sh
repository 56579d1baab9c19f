# stage beta
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step beta "${GP[@]}" run --all --size 1024 --alpha 1.5 --beta -0.75 --budget 0.2 -o "$B/beta_1024.json"
