#!/bin/bash
# One device call: environment, verification + timing table, SASS mix, ncu of chosen kernels at 4096.
# Usage (from the repository root on the GPU machine): bash .dev/fp32top/device_run.sh "ncu kernels..."
cd "$(dirname "$0")"
NCU_KERNELS=${1:-"128x128_mb2_g8"}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; nvcc --version | tail -2;
  python3 -c 'import cupy; print("cupy", cupy.__version__)'; } > "$OUT/env.txt" 2>&1
timeout 150 python3 harness.py build > "$OUT/harness.log" 2>&1
echo "harness rc=$?" >> "$OUT/harness.log"
cuobjdump -sass build/r13.cubin > /tmp/r13.sass && python3 sassmix.py /tmp/r13.sass > "$OUT/sass_mix.txt"
grep -A400 "Function : _Z25sgemm_pipelined_any_shapeILj128ELj128ELj8ELj2ELj2ELj256ELj8ELj2E" /tmp/r13.sass > /tmp/one.sass
cp /tmp/one.sass "$OUT/sass_128x128_mb2_head.txt"
for k in $NCU_KERNELS; do
  timeout 35 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section LaunchStats \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,sm__cycles_elapsed.avg.per_second \
    -k regex:gemm --launch-skip 1 --launch-count 1 --csv --print-units base \
    python3 ncu_target.py build "$k" 4096 4096 4096 > "$OUT/ncu_$k.csv" 2>&1
done
tail -45 "$OUT/harness.log"
