# stage fp8: h14's GPU tests, then h14, the Triton fp8 example and the torch._scaled_mm example beside cuBLASLt fp8 (e4m3, bf16 C): per-tensor scales at 4096 and 8192x8192x4096, block scales at 4096
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). REGIME=sustained passes --regime to the runs;
# FP8_TESTS overrides the test files (default: h14's; add tests/test_fp8_callables.py for the examples' own tests).
TRI=examples/triton_fp8/triton_fp8.py:matmul TOR=examples/torch_scaled_mm/torch_scaled_mm.py:matmul
step fp8_env python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'fp8', hasattr(torch, 'float8_e4m3fn'), 'scaled_mm', hasattr(torch, '_scaled_mm'))"
step fp8_tests python3 -m pytest -q -m gpu ${FP8_TESTS:-tests/test_hopper_fp8.py}
fp8_run() {  # fp8_run NAME ARGS...: h14 and both examples in one run, beside cuBLASLt (the run adds its row)
  local name=$1; shift
  step "$name" "${GP[@]}" run h14 --callable "$TRI" --callable "$TOR" --dtype e4m3 --c-dtype bf16 "$@" ${REGIME:+--regime "$REGIME"} -o "$B/$name.json"
}
fp8_run fp8_tensor_4096 --scales tensor --size 4096
fp8_run fp8_tensor_8192x8192x4096 --scales tensor -m 8192 -n 8192 -k 4096
fp8_run fp8_1x128_4096 --scales 1x128 --size 4096
# A 128x128 too (the torch example declares tensor and 1x128 only: h14 and Triton beside cuBLASLt's row, which is
# given A's block scales as 1x128 rows)
step fp8_128x128_4096 "${GP[@]}" run h14 --callable "$TRI" --dtype e4m3 --c-dtype bf16 --scales 128x128 --size 4096 ${REGIME:+--regime "$REGIME"} -o "$B/fp8_128x128_4096.json"
for r in fp8_tensor_4096 fp8_tensor_8192x8192x4096 fp8_1x128_4096 fp8_128x128_4096; do
  step "${r}_csv" "${GP[@]}" show "$B/$r.json" --format csv -o "$B/$r.csv"
done
