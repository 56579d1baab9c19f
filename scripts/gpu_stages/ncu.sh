# stage ncu
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step ncu_metrics bash -c "ncu --query-metrics --chip gh100 | grep -E 'ops_path_tensor|pipe_tensor_op_hmma|lts__t_bytes |l1tex__t_bytes |wavefronts_mem_shared_op|inst_executed_op_shared|fadd_pred_on|fmul_pred_on|device__attribute_display_name'"
step ncu "${GP[@]}" profile ${PROFILE_VARIANTS:-1-8 10} --size "$SIZE" --save "$B/profile_$SIZE.json" --save-csv "$B/ncu_$SIZE.csv"
step ncu_h3 "${GP[@]}" profile h3 --cublas --size 8192 --save "$B/profile_h3_8192.json" --save-csv "$B/ncu_h3_8192.csv"
