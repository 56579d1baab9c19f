#!/bin/bash
# Recreate the earlier versions of rung 15 that configs.py names, as patches of the committed
# kernels/fp32/15_interleaved_copies_any_shape.cu (run before build.py; the .cu files are not kept in git).
#   r15_call1.cu: call 1's kernel (copies spread on both paths, per-element epilogue); r15_call1_bunch.cu: its
#     copies all at k-step 0
#   r15_call7.cu: calls 4-7's kernel; -DIL15_VEC_STEPS=N spreads the 16-byte path's copies over N k-steps
#     (calls 4-7 built it with 1, 2 and 7; with 7 its SASS is the committed kernel's, byte for byte)
#   r15_call8_plain.cu: call 8's "r15": FFMAs row by row, float4 epilogue through temporaries
#   r15_call8_serpentine.cu: call 8's "serp": the same with the FFMAs in serpentine order
#   r15_call13_aligned_only.cu: call 13's rung 15 with only its aligned path and one orientation (the cost of any shape)
# The sources of calls 2 and 3 (epilogue attempts between call 1's and call 4's) were not kept.
set -e
cd "$(dirname "$0")"
for p in variants/*.patch; do v=$(basename "$p" .patch); patch -s -o "$v.cu" ../../../kernels/fp32/15_interleaved_copies_any_shape.cu "$p"; done
# call 1's "bunch": every copy of a tile issued at k-step 0
sed 's|PER_STEP = (ALL + STEPS - 1) / STEPS;|PER_STEP = ALL;|' r15_call1.cu > r15_call1_bunch.cu
grep -q "PER_STEP = ALL;" r15_call1_bunch.cu
