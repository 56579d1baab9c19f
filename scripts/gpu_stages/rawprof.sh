# stage rawprof: raw ncu and nsys output of gemmprof's own runs, kept as parser fixtures
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
M="--metrics regex:smsp__average_warp_latency_issue_stalled_.*\.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__inst_executed_pipe_tensor.sum,smsp__inst_executed_pipe_tensor_op_hmma.sum,gpu__time_duration.sum"
inc=()
for v in naive gmem_coalescing smem_caching blocktiling_1d blocktiling_2d vectorized warptiling mma_ldmatrix_swizzle; do inc+=(--nvtx-include "gemmprof $v ${SIZE}x${SIZE}x${SIZE}/"); done
step ncu_raw ncu --clock-control none --csv --page raw --print-units base --nvtx "${inc[@]}" $M "${GP[@]}" run 1-6 10 h3 --size "$SIZE" --launch-once --no-cublas
cp "$B/ncu_raw.log" "$B/ncu_raw_gemmprof_$SIZE.csv"
step ncu_details ncu --clock-control none --csv --page details --nvtx "${inc[@]}" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis "${GP[@]}" run 3 10 --size 2048 --launch-once --no-cublas
if [ -f .gpu/nsys-env.sh ]; then
  step nsys_raw bash -c "source .gpu/nsys-env.sh; nsys profile -t cuda,nvtx -s none --cpuctxsw=none --stats=true --export=sqlite --force-overwrite=true -o $B/gemmprof_nsys ${GP[*]} run 1 3 5 10 --size $SIZE --budget 0.2"
fi
