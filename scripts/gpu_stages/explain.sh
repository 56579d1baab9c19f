# stage explain: fresh inputs for explain's ladder check (both ladders timed and profiled), then the check
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
FP32_RUNGS=(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
step explain_run_fp32 "${GP[@]}" run "${FP32_RUNGS[@]}" --size "$SIZE" -o "$B/explain_run_fp32_$SIZE.json"
step explain_run_fp16 "${GP[@]}" run h1-h6 --dtype fp16 --size "$SIZE" -o "$B/explain_run_fp16_$SIZE.json"
# explain reads ncu's metrics (gemmprof asks for them by name) and these two sections: stalls, occupancy
step explain_prof_fp32 "${GP[@]}" profile "${FP32_RUNGS[@]}" --size "$SIZE" --section WarpStateStats --section Occupancy --save "$B/explain_profile_fp32_$SIZE.json" --save-csv "$B/explain_ncu_fp32_$SIZE.csv"
step explain_prof_fp16 "${GP[@]}" profile h1-h6 --dtype fp16 --size "$SIZE" --section WarpStateStats --section Occupancy --save "$B/explain_profile_fp16_$SIZE.json" --save-csv "$B/explain_ncu_fp16_$SIZE.csv"
for l in fp32 fp16; do
  for ext in json csv txt; do
    step "explain_ladder_${l}_$ext" "${GP[@]}" explain --ladder "$l" --results "$B/explain_run_${l}_$SIZE.json" --profile-results "$B/explain_profile_${l}_$SIZE.json" -o "$B/ladder_check_${l}_$SIZE.$ext"
  done
done
step explain_tops "${GP[@]}" explain 15 --results "$B/explain_run_fp32_$SIZE.json" --profile-results "$B/explain_profile_fp32_$SIZE.json" -o "$B/explain_15_$SIZE.txt"
step explain_h6 "${GP[@]}" explain h6 --results "$B/explain_run_fp16_$SIZE.json" --profile-results "$B/explain_profile_fp16_$SIZE.json" -o "$B/explain_h6_$SIZE.txt"
