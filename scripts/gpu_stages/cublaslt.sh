# stage cublaslt: cuBLAS's default algorithm against cuBLASLt's best of its top 8 (and h12), fp16 and bf16, at 4096, 8192 and three LLM layers, interleaved
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# nvmath-python is not on the GPU machine: carried as a wheel in .whl/ (carry [".whl"]) and installed here if missing
if ! python3 -c "import nvmath.bindings.cublasLt" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/cublaslt-site .whl/nvmath_python-*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/cublaslt-site"
fi
step cublaslt_env python3 -c "import nvmath, nvmath.bindings.cublasLt as lt; print('nvmath', nvmath.__version__, 'cuBLASLt', lt.get_version())"
step cublaslt_tests python3 -m pytest -q tests/test_cublaslt.py
# Llama-3-8B-like layers at 4096 tokens: the MLP's up projection, its down projection, attention's fused QKV
for shape in "--size 4096" "--size 8192" "-m 4096 -n 14336 -k 4096" "-m 4096 -n 4096 -k 14336" "-m 4096 -n 6144 -k 4096"; do
  tag=$(echo "$shape" | tr -d ' -' | sed 's/size//; s/m\([0-9]*\)n\([0-9]*\)k\([0-9]*\)/\1x\2x\3/')
  for dtype in fp16 bf16; do
    step "cublaslt_${dtype}_$tag" "${GP[@]}" run h12 --dtype "$dtype" $shape --cublaslt-best 8 --interleave -o "$B/cublaslt_${dtype}_$tag.json"
  done
done
