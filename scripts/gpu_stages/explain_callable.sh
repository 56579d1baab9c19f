# stage explain_callable: explain --callable on the Triton example from ncu's measurement alone (fp16 and bf16, at 4096 and at M = 64: 64 x 4096 x 4096), then once live with --measure
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# About 3-4 minutes: 4 ncu profiles of the callable beside cuBLAS (each ~30-40 s: torch and Triton start under
# ncu), explain reading each (no GPU), and one explain --measure (an ncu run of its own).
TRI=examples/triton_matmul/triton_matmul.py:matmul
for dt in fp16 bf16; do
  for mnk in 4096x4096x4096 64x4096x4096; do
    IFS=x read -r m n k <<< "$mnk"
    tag="${dt}_$mnk"
    step "explain_callable_prof_$tag" "${GP[@]}" profile --callable "$TRI" --dtype "$dt" -m "$m" -n "$n" -k "$k" --cublas --save "$B/explain_callable_profile_$tag.json" --save-csv "$B/explain_callable_ncu_$tag.csv"
    for ext in txt json; do
      step "explain_callable_${tag}_$ext" "${GP[@]}" explain --callable "$TRI" --profile-results "$B/explain_callable_profile_$tag.json" -o "$B/explain_callable_$tag.$ext"
    done
  done
done
step explain_callable_measure "${GP[@]}" explain --callable "$TRI" --dtype bf16 -m 64 -n 4096 -k 4096 --measure -o "$B/explain_callable_measure_bf16_64x4096x4096.txt"
