#!/bin/bash
# Recreate the kernels configs.py names (run in dev/): rung 14 at e61faee (r14_old.cu) and the variants as patches of it.
# r14w.cu: calls 1-3's chunked-B kernel ("r14" rows; -DONLY_VEC / -DONLY_WIN=PAT force one path). r14_newo.cu is the
# committed rung 14 of b9c23a9. rung 13 is kernels/fp32/13_pipelined_any_shape.cu (unchanged).
set -e
cd "$(dirname "$0")"
git show e61faee:kernels/fp32/14_multistage_any_shape.cu > r14_old.cu
for p in variants/*.patch; do v=$(basename "$p" .patch); patch -s -o "$v.cu" r14_old.cu "$p"; done
