# stage nsys
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step nsys bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys ${NSYS_VARIANTS:-1 3 5 10} --size $SIZE --save-report $B/compare_nsys_$SIZE; ${GP[*]} compare-nsys $B/compare_nsys_$SIZE.sqlite --format json -o $B/nsys_$SIZE.json"
