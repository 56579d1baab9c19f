#!/usr/bin/env bash
# The parameter sweeps behind the tuned defaults (rung 9 "autotuned", 10, 12, h3), on the GPU in hand.
# Usage: bash scripts/tune.sh OUTDIR   (each sweep writes OUTDIR/tune_<rung>.json and .log)
set -u
D=${1:?output directory}
T=(python3 scripts/tune.py)
"${T[@]}" autotuned --size 4096 BM=64,128,256 BN=64,128,256 BK=8,16,32 TM=4,8 TN=4,8 THREADS=256 \
  -o "$D/tune_9.json" >"$D/tune_9.log" 2>&1; tail -n 12 "$D/tune_9.log"
"${T[@]}" warptiling --size 4096 BM=128,256 BN=128,256 BK=8,16 WM=64,128 WN=32,64 WNITER=1,2 TM=4,8 TN=4 \
  THREADS=128,256 -o "$D/tune_10.json" >"$D/tune_10.log" 2>&1; tail -n 12 "$D/tune_10.log"
"${T[@]}" double_buffering_async --size 4096 BM=128 BN=128,256 BK=8,16 WM=32,64 WN=32,64 WNITER=1,2 TM=4,8 TN=4 \
  THREADS=128,256 -o "$D/tune_12.json" >"$D/tune_12.log" 2>&1; tail -n 12 "$D/tune_12.log"
"${T[@]}" h3 --size 8192 --budget 0.3 BM=128,256 BN=128,256 BK=32,64 STAGES=3,4 GROUP_M=8,16 \
  -o "$D/tune_h3.json" >"$D/tune_h3.log" 2>&1; tail -n 12 "$D/tune_h3.log"
