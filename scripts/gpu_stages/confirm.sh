# stage confirm: what benchmarks/2026-11-28_h200_true_number left unmeasured: the red team and honest variants without the late-start check (removed at 97ca4b1), h12 settled under zeros and the Triton example's regime check (where it fired), cuBLASLt's top 8 at 4096x4096x14336 (two dropped by the tail check then), rung 15 burst against sustained, and the checks' overhead over OVERHEAD_PAIRS pairs (default 5; 0 skips it). Carry .old and .whl.
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
if ! python3 -c "import nvmath.bindings.cublasLt" 2>/dev/null && ls .whl/nvmath_python-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/confirm-site .whl/nvmath_python-*.whl .whl/cuda_pathfinder-*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/confirm-site"
fi
source scripts/gpu_stages/honest.sh
R=(--regime burst)
step confirm_regime_4096 python3 scripts/regime_check.py --size 4096 --dtype fp16 -o "$B/regime_4096.json"
for d in fp16 bf16; do
  step "confirm_settled_${d}_zeros" "${GP[@]}" run h12 --dtype "$d" --size 8192 --regime sustained --fill zeros -o "$B/settled_${d}_zeros_8192.json"
done
step confirm_cublaslt_4096x4096x14336 "${GP[@]}" run h12 --dtype fp16 -m 4096 -n 4096 -k 14336 "${R[@]}" --budget 0.3 --cublaslt-best 8 --interleave -o "$B/cublaslt_fp16_4096x4096x14336.json"
for r in burst sustained; do
  step "confirm_15_$r" "${GP[@]}" run 15 --size 4096 --regime "$r" -o "$B/rung15_${r}_4096.json"
done
if [ "${OVERHEAD_PAIRS:-5}" -gt 0 ]; then OVERHEAD_PAIRS=${OVERHEAD_PAIRS:-5} source scripts/gpu_stages/overhead.sh; fi
