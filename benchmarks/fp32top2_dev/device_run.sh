#!/bin/bash
# One device call: environment, verification + timing table, SASS mix, ncu of chosen configurations at 4096
# (and of one at 4095x4097x1023). Usage (repository root on the GPU machine): bash .dev/fp32top2/device_run.sh "K1 K2"
cd "$(dirname "$0")"
NCU_KERNELS=${1:-"256x128_8x16_w8_s3"}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; nvcc --version | tail -2;
  python3 -c 'import cupy; print("cupy", cupy.__version__)'; ncu --version | tail -1; } > "$OUT/env.txt" 2>&1
cp build/ptxas.log "$OUT/ptxas.log"
timeout 150 python3 harness.py build > "$OUT/harness.log" 2>&1
echo "harness rc=$?" >> "$OUT/harness.log"
cuobjdump -sass build/r14.cubin > /tmp/r14.sass && python3 sassmix.py /tmp/r14.sass > "$OUT/sass_mix.txt"
METRICS=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldgsts.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
ncu1() {  # kernel M N K outfile
  timeout 40 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section LaunchStats --section SchedulerStats --metrics $METRICS \
    -k regex:gemm --launch-skip 1 --launch-count 1 --csv --print-units base \
    python3 ncu_target.py build "$1" "$2" "$3" "$4" > "$5" 2>&1
}
for k in $NCU_KERNELS; do ncu1 "$k" 4096 4096 4096 "$OUT/ncu_$k.csv"; done
ncu1 "${NCU_KERNELS%% *}" 4095 4097 1023 "$OUT/ncu_odd.csv"
grep -E "Name|gemm" "$OUT"/ncu_*.csv | grep -E "Duration|SM Throughput|Theoretical Occupancy|Registers|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|ffma|bank_conflicts" | cut -c1-220 | head -40
tail -32 "$OUT/harness.log"
