# stage final: the session's records in one call, most needed first (run with DEADLINE so the tarball always comes back): fast.cu fetched and run, the Hopper rungs through cuda.bindings, a .ncu-rep fixture; the red team and honest variants; the checks' overhead; burst and sustained against a loop and do_bench; cuBLAS settled under two fills; cuBLASLt best of 8
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). Carry .fetched, .whl and .old.
if ! python3 -c "import nvmath.bindings.cublasLt" 2>/dev/null && ls .whl/nvmath_python-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/final-site .whl/nvmath_python-*.whl .whl/cuda_pathfinder-*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/final-site"
fi
FETCHED=$PWD/.fetched
step final_fetch python3 scripts/fetch_public_kernel.py --dest "$FETCHED"
step final_public12 env GEMMPROF_CACHE="$FETCHED" "${GP[@]}" run h12 --dtype bf16 --spec examples/public_fastcu12/fastcu12.yaml --size 4096 --regime burst --interleave -o "$B/public12_4096.json"
step final_hopper_bf16 "${GP[@]}" run h4-h13 --dtype bf16 --size 4096 --regime burst -o "$B/hopper_bf16_4096.json"
step final_ncurep ncu --clock-control none --target-processes all -f -o "$B/h200_small" --nvtx \
  --nvtx-include "gemmprof smem_caching 1024x1024x1024/" --nvtx-include "gemmprof mma_ldmatrix_swizzle 1024x1024x1024/" \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --metrics "$(python3 -c "from gemmprof.adapters.ncu.run import metric_list; print(','.join(metric_list()))")" \
  python3 -m gemmprof run 3 h3 --size 1024 --launch-once --no-cublas
for page in details raw; do
  step "final_ncurep_$page" bash -c 'ncu --import "$0" --csv --page "$1" --print-units base > "$2"' "$B/h200_small.ncu-rep" "$page" "$B/h200_small_$page.csv"
done
source scripts/gpu_stages/truth.sh
source scripts/gpu_stages/overhead.sh
source scripts/gpu_stages/regimes.sh
for shape in "--size 4096" "--size 8192" "-m 4096 -n 14336 -k 4096" "-m 4096 -n 4096 -k 14336" "-m 4096 -n 6144 -k 4096"; do
  tag=$(echo "$shape" | tr -d ' -' | sed 's/size//; s/m\([0-9]*\)n\([0-9]*\)k\([0-9]*\)/\1x\2x\3/')
  step "final_cublaslt_$tag" "${GP[@]}" run h12 --dtype fp16 $shape --regime burst --cublaslt-best 8 --interleave -o "$B/cublaslt_fp16_$tag.json"
done
