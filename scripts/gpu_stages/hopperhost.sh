# stage hopperhost: the Hopper rungs through cuda.bindings (cuTensorMapEncodeTiled, cuLaunchKernelEx with the cluster attribute): their GPU tests (tests/test_hopper_*.py), then h4-h13 verified and timed at 4096 in fp16 and bf16 beside cuBLAS
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step hopperhost_binding python3 -c "import cuda.bindings, cuda.bindings.driver as d; print('cuda-bindings', cuda.bindings.__version__, d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)"
step hopperhost_binding_tests python3 -m pytest -q -rs tests/test_hopper_host.py  # the installed binding, no kernel launched
step hopperhost_tests python3 -m pytest -q -rs -m gpu tests/test_hopper_rungs.py tests/test_hopper_clusters.py tests/test_hopper_split_k.py tests/test_hopper_pingpong.py tests/test_hopper_stream_k.py tests/test_hopper_skinny.py tests/test_hopper_tma_store.py tests/test_hopper_cluster_split_k.py
for dt in fp16 bf16; do
  step "hopperhost_$dt" "${GP[@]}" run h4-h13 --dtype "$dt" --size 4096 --budget 0.2 -o "$B/hopperhost_$dt.json"
done
