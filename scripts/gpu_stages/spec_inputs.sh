# stage spec_inputs: specs build only what they say; launchers without kernels of their own run; a missing entry fails alone
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). About 2 minutes.
S="$B/spec_inputs"
mkdir -p "$S/work"
cat > "$S/lib_cublas.cu" <<'EOF'
// A host launcher without a __global__ kernel of its own: cuBLAS (row-major C = A B as C^T = B^T A^T).
#include <cuda_runtime.h>
#include <cublas_v2.h>
extern "C" int lib_cublas(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
                          cudaStream_t s) {
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    if (cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) return 2;
    return (int)cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
}
EOF
cat > "$S/lib_memset.cu" <<'EOF'
// One that only clears C: it builds and runs, and verification fails it (a build's "ok" is not about results).
#include <cuda_runtime.h>
extern "C" int lib_memset(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
                          cudaStream_t s) {
    return (int)cudaMemsetAsync(C, 0, sizeof(float) * M * N, s);
}
EOF
printf 'name: lib_cublas\nlauncher: lib_cublas.cu\nentry: lib_cublas\nlibs: [cublas]\n' > "$S/lib_cublas.yaml"
printf 'name: lib_memset\nlauncher: lib_memset.cu\nentry: lib_memset\n' > "$S/lib_memset.yaml"
cp examples/multifile_include/sgemm_tiled.cu "$S/" && cp -r examples/multifile_include/include "$S/"
printf 'name: no_entry\nfile: sgemm_tiled.cu\nentry: not_there\ninclude_dirs: [include]\ndefines: [TILE=16]\ngrid: ["cdiv(N, 16)", "cdiv(M, 16)"]\nblock: [16, 16]\n' > "$S/no_entry.yaml"
printf 'name: keeps\nfile: sgemm_tiled.cu\nentry: sgemm_tiled\ninclude_dirs: [include]\ndefines: ["TILE=16+0*$(touch ran)"]\nflags: [-keep]\ngrid: [1]\nblock: [1]\n' > "$S/keeps.yaml"
step spec_inputs_tests env HYPOTHESIS_PROFILE=quick python3 -m pytest -q tests/test_build_safety.py tests/test_last_bad_inputs.py
step spec_inputs_build "${GP[@]}" build --spec "$S/lib_cublas.yaml" --spec "$S/lib_memset.yaml" --spec "$S/no_entry.yaml" --format csv -o "$S/build.csv"
# expected: naive and lib_cublas pass, lib_memset fails verification (it runs), no_entry fails alone with the entry line
step spec_inputs_run "${GP[@]}" run 1 --spec "$S/lib_cublas.yaml" --spec "$S/lib_memset.yaml" --spec "$S/no_entry.yaml" --size 1024 --budget 0.2 -o "$S/run_1024.json"
# expected: rc=2, one line naming defines[0]; nothing in work/ (no `ran`, no kept files)
step spec_inputs_refused bash -c "cd '$S/work' && HOME='$S/work' ${GP[*]} run --spec ../keeps.yaml --size 256; echo rc=\$?; ls -A"
