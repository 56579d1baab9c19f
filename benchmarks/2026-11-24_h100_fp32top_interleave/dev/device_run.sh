#!/bin/bash
# One device call (repo root, $OUT set, carry .devbuild): env, harness (verify, then time interleaved with cuBLAS),
# compute-sanitizer on the small checks, ncu (details + source page) of chosen launches.
#   KERN=name,name SAN=name,name NCU="name M N K offB tag;..." bash benchmarks/.../dev/device_run.sh
D=$(cd "$(dirname "$0")" && pwd); BUILD=$PWD/.devbuild
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv; nvcc --version | tail -2;
  python3 -c 'import cupy; print("cupy", cupy.__version__)'; ncu --version | tail -1; compute-sanitizer --version | tail -1; } > $R/env.txt 2>&1
cp $BUILD/ptxas.log $R/
(cd $D && timeout ${HT:-300} python3 harness.py $BUILD ${KERN:-all} ${SHAPES:+--shapes "$SHAPES"}) > $R/harness.log 2>&1; echo "harness rc=$?" >> $R/harness.log
if [ -n "$SAN" ]; then
  (cd $D && timeout 150 compute-sanitizer --tool memcheck --print-limit 20 python3 sanitize.py $BUILD $SAN) > $R/sanitize.log 2>&1
  echo "sanitize rc=$?" >> $R/sanitize.log
fi
IFS=';' read -ra NC <<< "${NCU:-}"
for spec in "${NC[@]}"; do
  set -- $spec
  (cd $D && timeout 150 ncu --clock-control none --set full --import-source no -k regex:gemm --launch-skip 1 --launch-count 1 \
    -o $R/$6 -f python3 harness.py $BUILD --launch $1 $2 $3 $4 $5) > $R/$6.log 2>&1
  ncu --import $R/$6.ncu-rep --csv --print-units base --page details > $R/$6_details.csv 2>&1
  ncu --import $R/$6.ncu-rep --csv --page source --print-source sass > $R/$6_source.csv 2>&1
  python3 $D/../../2026-11-24_h100_fp32top_stalls/dev/stallmix.py $R/$6_source.csv > $R/$6_stallmix.txt 2>&1
  gzip -f $R/$6_source.csv
  head -16 $R/$6_stallmix.txt
done
IFS=';' read -ra SP <<< "${SMS:-}"
for spec in "${SP[@]}"; do  # per-SM spread of one launch: active cycles min/avg/max, blocks per SM min/max
  set -- $spec
  echo "== $spec" >> $R/smspread.txt
  (cd $D && timeout 90 ncu --clock-control none -k regex:gemm --launch-skip 1 --launch-count 1 --csv --print-units base \
    --metrics sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,sm__ctas_launched.min,sm__ctas_launched.max,gpu__time_duration.sum \
    python3 harness.py $BUILD --launch $1 $2 $3 $4 $5) 2>&1 | grep -E '"(sm|gpu)__' | awk -F'","' '{print $(NF-2), $NF}' >> $R/smspread.txt
done
[ -f $R/smspread.txt ] && cat $R/smspread.txt
[ -f $R/sanitize.log ] && { tail -2 $R/sanitize.log; echo "sanitize FAIL lines: $(grep -c FAIL $R/sanitize.log)"; }
grep "VERIFICATION\|verification:" $R/harness.log
grep -A40 "^| kernel" $R/harness.log
rm -f $R/*.ncu-rep; tar -C $OUT -czf $OUT/r.tgz r; rm -rf $R
