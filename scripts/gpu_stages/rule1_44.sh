# stage rule1_44: the plan's rule 1 (h8's 128 x 64 tiles, K split in two, at 65-128 rows with K past 11008) beside h11 and cuBLAS in turns at the shapes the rule rests on, fp16 and bf16
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/rule1_44"
for dt in fp16 bf16; do
  for shape in 128x4096x14336 128x3584x18944 96x3584x18944; do
    IFS=x read -r m n k <<<"$shape"
    step "rule1_44_${dt}_$shape" "${GP[@]}" run plan h11 --dtype "$dt" -m "$m" -n "$n" -k "$k" --interleave \
      --budget 0.5 --max-reps 4000 -o "$B/rule1_44/run_${dt}_$shape.json"
  done
done
