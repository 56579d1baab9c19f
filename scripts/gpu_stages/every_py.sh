# stage every_py: Python callables (the Triton and torch.matmul examples) beside cuBLAS and torch.matmul
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# the Triton example writes fp32 C; the torch example writes the inputs' half type (--c-dtype), so each has its runs
TRI=examples/triton_matmul/triton_matmul.py:matmul TOR=examples/torch_matmul/torch_matmul.py:matmul
step every_py_env python3 -c "import cupy, torch, triton; a = cupy.arange(6, dtype=cupy.float32); t = torch.from_dlpack(a); h = torch.from_dlpack(cupy.zeros(4, dtype=cupy.uint16).view(cupy.int16)).view(torch.bfloat16); print('cupy', cupy.__version__, 'torch', torch.__version__, 'triton', triton.__version__, 'dlpack shares', t.data_ptr() == a.data.ptr, 'bf16 view', h.dtype)"
step every_py_tests python3 -m pytest -q tests/test_callables.py tests/test_callable_c_dtype.py
step every_py_cupy "${GP[@]}" run --callable "$TRI" --size 4096 --dtype fp16 -o "$B/every_py_cupy_4096.json"
step every_py_cupy_tor "${GP[@]}" run --callable "$TOR" --size 4096 --dtype fp16 --c-dtype fp16 -o "$B/every_py_cupy_tor_4096.json"
step every_py_torch "${GP[@]}" run --callable "$TRI" --size 4096 --dtype fp16 --arrays torch -o "$B/every_py_torch_4096.json"
step every_py_torch_tor "${GP[@]}" run --callable "$TOR" --size 4096 --dtype fp16 --c-dtype fp16 --arrays torch -o "$B/every_py_torch_tor_4096.json"
step every_py_bf16 "${GP[@]}" run --callable "$TRI" --size 4096 --dtype bf16 -o "$B/every_py_bf16_4096.json"
step every_py_bf16_tor "${GP[@]}" run --callable "$TOR" --size 4096 --dtype bf16 --c-dtype bf16 -o "$B/every_py_bf16_tor_4096.json"
step every_py_odd "${GP[@]}" run --callable "$TRI" -m 4095 -n 4097 -k 1023 --dtype fp16 --alpha 1.5 --beta -0.75 --budget 0.3 -o "$B/every_py_odd.json"
step every_py_odd_tor "${GP[@]}" run --callable "$TOR" -m 4095 -n 4097 -k 1023 --dtype fp16 --c-dtype fp16 --alpha 1.5 --beta -0.75 --budget 0.3 -o "$B/every_py_odd_tor.json"
step every_py_1000_tor "${GP[@]}" run --callable "$TOR" -m 1000 -n 1030 -k 520 --dtype fp16 --c-dtype fp16 --budget 0.3 -o "$B/every_py_1000_tor.json"
step every_py_fp32 "${GP[@]}" run 15 --callable "$TRI" --callable "$TOR" --size 2048 --budget 0.3 -o "$B/every_py_fp32_2048.json"
step every_py_profile "${GP[@]}" profile --callable "$TRI" --cublas --size 4096 --dtype fp16 --save "$B/every_py_profile_4096.json" --save-csv "$B/every_py_ncu_4096.csv"
step every_py_profile_tor "${GP[@]}" profile --callable "$TOR" --cublas --size 4096 --dtype fp16 --c-dtype fp16 --save "$B/every_py_profile_tor_4096.json" --save-csv "$B/every_py_ncu_tor_4096.csv"
step every_py_report "${GP[@]}" report "$B/every_py_cupy_4096.json" --profile-results "$B/every_py_profile_4096.json" -o "$B/every_py_report_4096.html"
step every_py_report_tor "${GP[@]}" report "$B/every_py_cupy_tor_4096.json" --profile-results "$B/every_py_profile_tor_4096.json" -o "$B/every_py_report_tor_4096.html"
# gemmprof's burst and sustained figures beside a 3-second loop and do_bench, both callables
step every_py_regime python3 scripts/regime_check.py --size 4096 --dtype fp16 -o "$B/every_py_regime_4096.json"
if [ -f .gpu/nsys-env.sh ]; then
  step every_py_nsys bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys --callable $TRI --size 4096 --dtype fp16 --save-report $B/every_py_nsys_4096"
  step every_py_nsys_tor bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys --callable $TOR --size 4096 --dtype fp16 --c-dtype fp16 --save-report $B/every_py_nsys_tor_4096"
fi
