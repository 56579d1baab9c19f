# stage regimes: cuBLAS fp16 and bf16 at 8192 settled under uniform [-1, 1) and under zeros (clock, power, throttle reasons, energy per GEMM); burst against sustained for rung 15 and h12 beside cuBLAS
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
for d in fp16 bf16; do
  for f in uniform zeros; do
    step "regimes_${d}_$f" "${GP[@]}" run h12 --dtype "$d" --size 8192 --regime sustained --fill "$f" -o "$B/regimes_${d}_${f}_8192.json"
  done
done
for r in burst sustained; do
  step "regimes_15_$r" "${GP[@]}" run 15 --size 4096 --regime "$r" -o "$B/regimes_15_${r}_4096.json"
  step "regimes_h12_$r" "${GP[@]}" run h12 --dtype fp16 --size 8192 --regime "$r" -o "$B/regimes_h12_${r}_8192.json"
done
