#!/bin/bash
# issue 17 experiment: ncu's address-derived (SASS) shared wavefronts vs its hardware counters; h2's L1 sectors by op
B=$OUT/exp17b; mkdir -p $B
ncu --query-metrics --chip gh100 > $B/query.txt 2>&1
grep -E "^(smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared|smsp__sass_inst_executed_op_shared|l1tex__t_sectors_pipe_lsu_mem_global_op|l1tex__t_requests_pipe_lsu_mem_global_op|l1tex__m_xbar2l1tex_read_sectors|l1tex__t_sectors_pipe_lsu|l1tex__data_pipe_lsu_wavefronts_mem_shared|l1tex__data_bank_conflicts_pipe_lsu_mem_shared|smsp__inst_executed_op_shared|smsp__inst_executed_op_ldgsts|l1tex__t_bytes|l1tex__t_sectors |l1tex__data_bank_(reads|writes)|smsp__sass_data_bytes_mem_shared)" $B/query.txt | awk '{print $1}' | sort -u > $B/metrics_found.txt
M=""
for m in $(cat $B/metrics_found.txt); do M="$M,$m.sum"; done; M=${M#,}
echo "$M" > $B/metrics_used.txt
S=4096
INC=(); for n in smem_caching blocktiling_2d wmma_seed001 wmma_multistage pipelined_any_shape; do INC+=(--nvtx-include "gemmprof $n ${S}x${S}x${S}/"); done
timeout 400 ncu --clock-control none --csv --page raw --print-units base --target-processes all --nvtx "${INC[@]}" --metrics "$M" \
  python3 -m gemmprof run 3 5 13 h1 h2 -m $S -n $S -k $S --launch-once --no-cublas > $B/ncu_raw.csv 2> $B/ncu_err.txt
echo "ncu rc=$?" >> $B/ncu_err.txt
tail -5 $B/ncu_err.txt; wc -l $B/metrics_found.txt $B/ncu_raw.csv
