# stage gaps44d: plan rule 1 (65-128 rows, long K: h8's 128 x 64 tiles, K split in two) beside h11 (what rule 2 ran there before) and cuBLAS in turns, fp16 and bf16, at 128 x 4096 x 14336 (the built-in sweep's shape) and at two shapes it was not made on: 128 and 96 x 3584 x 18944 (Qwen2.5 7B's down_proj)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/gaps44d"
for dtype in fp16 bf16; do
  for shape in 128x4096x14336 128x3584x18944 96x3584x18944; do
    IFS=x read -r m n k <<<"$shape"
    step "gaps44d_run_${dtype}_$shape" "${GP[@]}" run plan h11 --dtype "$dtype" -m "$m" -n "$n" -k "$k" --interleave \
      --budget 0.5 -o "$B/gaps44d/run_${dtype}_$shape.json"
  done
done
