#!/bin/bash
# Per-SM active cycles (min / avg / max) of one launch at two shapes: is an odd N an imbalance between SMs?
cd "$(dirname "$0")"; export PATH=/usr/local/cuda/bin:$PATH
for spec in "$@"; do
  set -- $spec
  echo "== $spec"
  timeout 60 ncu --clock-control none -k regex:gemm --launch-skip 1 --launch-count 1 --csv --print-units base \
    --metrics sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,sm__ctas_launched.min,sm__ctas_launched.max,gpu__time_duration.sum \
    python3 ncu_target.py build $1 $2 $3 $4 $5 2>&1 | grep -E '"(sm|gpu)__' | awk -F'","' '{print $(NF-2), $NF}'
done
