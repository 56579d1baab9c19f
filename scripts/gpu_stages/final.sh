# stage final: the session's records in one call, most needed first (with DEADLINE the tarball always comes back): fast.cu fetched and run, the Hopper rungs through cuda.bindings, a .ncu-rep fixture; the red team and honest variants; burst and sustained against a loop and do_bench; energy; explain on this GPU; the checks' overhead; the ceilings; cuBLAS settled under two fills; cuBLASLt best of 8
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). Carry .fetched, .whl and .old.
if ! python3 -c "import nvmath.bindings.cublasLt" 2>/dev/null && ls .whl/nvmath_python-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/final-site .whl/nvmath_python-*.whl .whl/cuda_pathfinder-*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/final-site"
fi
FETCHED=$PWD/.fetched
R=(--regime burst)
step final_env python3 -c "import cuda.bindings, pynvml; print('cuda-bindings', cuda.bindings.__version__); import nvmath; print('nvmath', nvmath.__version__)"
step final_fetch python3 scripts/fetch_public_kernel.py --dest "$FETCHED"
step final_public12 env GEMMPROF_CACHE="$FETCHED" "${GP[@]}" run h12 --dtype bf16 --spec examples/public_fastcu12/fastcu12.yaml --size 4096 "${R[@]}" --interleave -o "$B/public12_4096.json"
step final_hopper_bf16 "${GP[@]}" run h4-h13 --dtype bf16 --size 4096 "${R[@]}" -o "$B/hopper_bf16_4096.json"
step final_ncurep ncu --clock-control none --target-processes all -f -o "$B/h200_small" --nvtx \
  --nvtx-include "gemmprof smem_caching 1024x1024x1024/" --nvtx-include "gemmprof mma_ldmatrix_swizzle 1024x1024x1024/" \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --metrics "$(python3 -c "from gemmprof.adapters.ncu.run import metric_list; print(','.join(metric_list()))")" \
  python3 -m gemmprof run 3 h3 --size 1024 --launch-once --no-cublas
for page in details raw; do
  step "final_ncurep_$page" bash -c 'ncu --import "$0" --csv --page "$1" --print-units base > "$2"' "$B/h200_small.ncu-rep" "$page" "$B/h200_small_$page.csv"
done
RED_TEAM_OUT="$B/redteam" step final_redteam python3 -m pytest -q -m gpu tests/test_red_team.py
step final_fp32 "${GP[@]}" run --all --dtype fp32 --size 2048 "${R[@]}" -o "$B/honest_fp32_2048.json"
step final_fp16 "${GP[@]}" run h1-h13 --dtype fp16 --size 4096 "${R[@]}" -o "$B/honest_fp16_4096.json"
step final_examples "${GP[@]}" run --spec examples/colmajor_ld/sgemm_colmajor.yaml --spec examples/splitk_launcher/splitk.yaml --spec examples/multifile_include/sgemm_tiled.yaml --size 2048 "${R[@]}" -o "$B/honest_examples_2048.json"
step final_py "${GP[@]}" run --callable examples/triton_matmul/triton_matmul.py:matmul --dtype fp16 --size 4096 "${R[@]}" -o "$B/honest_py_4096.json"
for s in 4096 8192; do
  step "final_regime_$s" python3 scripts/regime_check.py --size "$s" --dtype fp16 -o "$B/regime_$s.json"
done
step final_sustained_8192 "${GP[@]}" run h12 --dtype fp16 --size 8192 --regime sustained -o "$B/sustained_8192.json"
step final_roofline "${GP[@]}" roofline "$B/sustained_8192.json" -o "$B/roofline_sustained_8192.png" --table "$B/roofline_sustained_8192.json"
step final_l2_cold python3 scripts/l2_cold_check.py --mib 32 -o "$B/l2_cold.json"
step final_explain_device "${GP[@]}" explain h12 --measure --size 4096 -o "$B/explain_device_h12_4096.json"
source scripts/gpu_stages/overhead.sh
STEP_TIMEOUT=120 step final_ceiling env GEMMPROF_DATA="$B/ceiling_data" "${GP[@]}" ceiling --dtype fp16 --dtype bf16 --shapes 8192 -o "$B/ceiling.json"
for d in fp16 bf16; do
  for f in uniform zeros; do
    step "final_settled_${d}_$f" "${GP[@]}" run h12 --dtype "$d" --size 8192 --regime sustained --fill "$f" -o "$B/settled_${d}_${f}_8192.json"
  done
done
for shape in "--size 4096" "--size 8192" "-m 4096 -n 14336 -k 4096" "-m 4096 -n 4096 -k 14336" "-m 4096 -n 6144 -k 4096"; do
  tag=$(echo "$shape" | tr -d ' -' | sed 's/size//; s/m\([0-9]*\)n\([0-9]*\)k\([0-9]*\)/\1x\2x\3/')
  step "final_cublaslt_$tag" "${GP[@]}" run h12 --dtype fp16 $shape "${R[@]}" --budget 0.3 --cublaslt-best 8 --interleave -o "$B/cublaslt_fp16_$tag.json"
done
