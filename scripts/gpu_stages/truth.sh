# stage truth: the timing's regimes and checks on the GPU: NVML's counters, the red team caught, honest rungs, examples and callables passing every check, sustained against a 3-s loop and do_bench, a sustained run with energy
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step truth_env python3 -c "
import pynvml, time
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h); t0 = time.monotonic(); seen = [e0]
while time.monotonic() - t0 < 1.0:
    e = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
    if e != seen[-1]: seen.append(e)
print('energy counter updates in 1 s idle:', len(seen) - 1, 'power', pynvml.nvmlDeviceGetPowerUsage(h), 'mW')
print('clocks sm', pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM), 'app', pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_SM), 'default app', pynvml.nvmlDeviceGetDefaultApplicationsClock(h, pynvml.NVML_CLOCK_SM))
from cuda.bindings import runtime as rt
import cuda.bindings; print('cuda-bindings', cuda.bindings.__version__)
print('persisting L2 limit', rt.cudaDeviceGetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize))
"
RED_TEAM_OUT="$B/redteam" STEP_TIMEOUT=${STEP_TIMEOUT:-400} step truth_redteam python3 -m pytest -q -m gpu tests/test_red_team.py tests/test_interleave.py
R=(--regime "${REGIME:-burst}")
step truth_fp32 "${GP[@]}" run --all --dtype fp32 --size 2048 "${R[@]}" -o "$B/truth_fp32_2048.json"
step truth_fp16 "${GP[@]}" run h1-h13 --dtype fp16 --size 4096 "${R[@]}" -o "$B/truth_fp16_4096.json"
step truth_examples "${GP[@]}" run --spec examples/colmajor_ld/sgemm_colmajor.yaml --spec examples/splitk_launcher/splitk.yaml --spec examples/multifile_include/sgemm_tiled.yaml --size 2048 "${R[@]}" -o "$B/truth_examples_2048.json"
step truth_py "${GP[@]}" run --callable examples/triton_matmul/triton_matmul.py:matmul --dtype fp16 --size 4096 "${R[@]}" -o "$B/truth_py_4096.json"
for s in 4096 8192; do
  step "truth_regime_$s" python3 scripts/regime_check.py --size "$s" --dtype fp16 -o "$B/regime_$s.json"
done
step truth_sustained_8192 "${GP[@]}" run h12 --dtype fp16 --size 8192 --regime sustained -o "$B/sustained_8192.json"
step truth_l2_cold python3 scripts/l2_cold_check.py --mib 32 -o "$B/l2_cold.json"
