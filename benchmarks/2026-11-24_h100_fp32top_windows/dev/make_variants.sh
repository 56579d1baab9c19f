#!/bin/bash
# Recreate the kernels configs.py names, and fetch the unchanged scripts (run in dev/): rung 14 at e61faee (r14_old.cu) and the variants as patches of it.
# r14w.cu: calls 1-3's chunked-B kernel ("r14" rows; -DONLY_VEC / -DONLY_WIN=PAT force one path). r14_newo.cu is the
# committed rung 14 of b9c23a9. rung 13 is kernels/fp32/13_pipelined_any_shape.cu (unchanged).
set -e
cd "$(dirname "$0")"
git show e61faee:kernels/fp32/14_multistage_any_shape.cu > r14_old.cu
for p in variants/*.patch; do v=$(basename "$p" .patch); patch -s -o "$v.cu" r14_old.cu "$p"; done
# scripts unchanged since round 3 are that record's
for f in ncu_target.py probe.py stallmix.py ncu_run.sh; do cp ../../2026-11-24_h100_fp32top_stalls/dev/$f .; done
