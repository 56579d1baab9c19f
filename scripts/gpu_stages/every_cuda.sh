# stage every_cuda: each CUDA example run beside cuBLAS (same input and output types), profiled, built, reported
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
ex=(colmajor_ld/sgemm_colmajor hgemm_half_c/hgemm_half_c splitk_launcher/splitk multifile_include/sgemm_tiled)
specs=(); for e in "${ex[@]}"; do specs+=(--spec "examples/$e.yaml"); done
step every_cuda_tests python3 -m pytest -q tests/test_examples.py tests/test_abi.py tests/test_launcher.py
step every_cuda_build "${GP[@]}" build "${specs[@]}" --format csv -o "$B/every_cuda_build.csv"
step every_cuda_run "${GP[@]}" run "${specs[@]}" --size "$SIZE" -o "$B/every_cuda_$SIZE.json"
step every_cuda_run_odd "${GP[@]}" run "${specs[@]}" -m 4095 -n 4097 -k 1023 --budget 0.3 -o "$B/every_cuda_odd.json"
step every_cuda_csv "${GP[@]}" show "$B/every_cuda_$SIZE.json" --format csv -o "$B/every_cuda_$SIZE.csv"
for e in "${ex[@]}"; do
  n=$(basename "$e")
  step "every_cuda_profile_$n" "${GP[@]}" profile --spec "examples/$e.yaml" --size "$SIZE" --cublas --save-csv "$B/every_cuda_ncu_$n.csv" --save "$B/every_cuda_profile_$n.json" --format csv -o "$B/every_cuda_profile_$n.csv"
done
step every_cuda_report "${GP[@]}" report "$B/every_cuda_$SIZE.json" --profile-results "$B/every_cuda_profile_splitk.json" -o "$B/every_cuda_report_$SIZE.html"
if [ -f .gpu/nsys-env.sh ]; then
  step every_cuda_nsys bash -c "source .gpu/nsys-env.sh; nsys profile -t cuda,nvtx -s none --cpuctxsw=none --export=sqlite --force-overwrite=true -o $B/every_cuda_nsys ${GP[*]} run ${specs[*]} --size $SIZE --budget 0.2; ${GP[*]} compare-nsys $B/every_cuda_nsys.sqlite --format json -o $B/every_cuda_nsys.json"
fi
