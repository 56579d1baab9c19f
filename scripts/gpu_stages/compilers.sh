# stage compilers: every rung built by nvcc and by NVRTC, and gemmprof's nvcc median against a plain events loop
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step compilers python3 scripts/compiler_check.py --size "$SIZE" --no-flush -o "$B/compiler_check_$SIZE.json"
step two_compilers "${GP[@]}" run 5 10 12 13 h3 --size "$SIZE" --compiler nvcc,nvrtc -o "$B/two_compilers_$SIZE.json"
