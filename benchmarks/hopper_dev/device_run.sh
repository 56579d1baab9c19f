#!/bin/bash
# one device call: versions, SASS instruction counts, a guarded smoke test of the cluster rung, the harness
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -2;
  python3 -c "import cupy; print('cupy', cupy.__version__)"; } > $OUT/env.txt 2>&1
for f in .dev/hopper/cubins/*_fp16.cubin; do
  echo "== $f"; cuobjdump -sass "$f" | grep -oE '^\s+/\*[0-9a-f]+\*/\s+[A-Z][A-Z0-9]*' | awk '{print $2}' | sort | uniq -c | sort -rn | head -25
  echo "HGMMA_total $(cuobjdump -sass "$f" | grep -c HGMMA)"
done > $OUT/sass_counts.txt 2>&1
ONLY=""
if ! timeout 60 python3 .dev/hopper/bench.py --only h7 --sizes 4096 --dtypes fp16 --reps 5 > $OUT/smoke_h7.txt 2>&1; then
  echo "h7 smoke failed or hung: running without h7"; tail -5 $OUT/smoke_h7.txt; ONLY="--only h4,h5,h6,h6np,h6g16"
fi
timeout 200 python3 .dev/hopper/bench.py --json $OUT/results.json $ONLY "$@" 2>&1 | tee $OUT/bench_log.txt
grep -E "^==|HGMMA_total" $OUT/sass_counts.txt
