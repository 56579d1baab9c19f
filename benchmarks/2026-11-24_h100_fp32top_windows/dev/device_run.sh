#!/bin/bash
# One device call for rung 14 (windows): env, verification + timing, compute-sanitizer on small shapes, ncu (details + source
# page with sampled stalls per SASS instruction). Usage: bash .dev/r16/device_run.sh  (repo root, $OUT set)
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r16; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; nvcc --version | tail -2;
  python3 -c 'import cupy; print("cupy", cupy.__version__)'; ncu --version | tail -1; compute-sanitizer --version | tail -1; } > $R/env.txt 2>&1
cp build/ptxas.log $R/
timeout ${HT:-200} python3 harness.py build ${KERN:-} > $R/harness.log 2>&1; echo "harness rc=$?" >> $R/harness.log
timeout 120 compute-sanitizer --tool memcheck --print-limit 20 python3 sanitize.py build ${SAN:-all3_128x256,all3_256x128} > $R/sanitize.log 2>&1
echo "sanitize rc=$?" >> $R/sanitize.log
ncu1() {  # name M N K OFFB out
  timeout 90 ncu --clock-control none --set full --import-source no -k regex:gemm --launch-skip 1 --launch-count 1 \
    -o $R/$6 -f python3 ncu_target.py build $1 $2 $3 $4 $5 > $R/$6.log 2>&1
  ncu --import $R/$6.ncu-rep --csv --print-units base --page details > $R/$6_details.csv 2>&1
  ncu --import $R/$6.ncu-rep --csv --page source --print-source sass > $R/$6_source.csv 2>&1
}
grep -q "verification: all" $R/harness.log && [ -z "$NONCU" ] && { ncu1 ${NCU1:-all3_128x256} 4096 4096 4096 0 ncu_a_4096; ncu1 ${NCU2:-all3_256x128} 4095 4097 1023 0 ncu_b_odd; ncu1 cublas 4095 4097 1023 0 ncu_cublas_odd; }
tail -3 $R/sanitize.log; grep -c FAIL $R/sanitize.log
grep -A60 "^| kernel" $R/harness.log
rm -f $R/*.ncu-rep; tar -C $OUT -czf $OUT/r16.tgz r16; rm -rf $R
