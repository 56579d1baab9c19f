// A column-major SGEMM in cuBLAS's convention: every matrix stored column by column with a leading dimension,
// C = alpha * A @ B + beta * C, element (i, j) of C at C[i + j * ldc]. Simple shared-memory tiling; any shape.
#define TS 16

extern "C" __global__ void sgemm_colmajor(int M, int N, int K, float alpha, const float* A, int lda,
                                          const float* B, int ldb, float beta, float* C, int ldc) {
    __shared__ float As[TS][TS + 1];  // As[k][i]: +1 keeps the column reads free of bank conflicts
    __shared__ float Bs[TS][TS + 1];  // Bs[j][k]
    const int i = blockIdx.x * TS + threadIdx.x;  // threadIdx.x runs along M: contiguous in column-major A and C
    const int j = blockIdx.y * TS + threadIdx.y;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        const int ka = k0 + threadIdx.y, kb = k0 + threadIdx.x;
        As[threadIdx.y][threadIdx.x] = (i < M && ka < K) ? A[i + (size_t)ka * lda] : 0.0f;
        const int jb = blockIdx.y * TS + threadIdx.y;
        Bs[threadIdx.y][threadIdx.x] = (jb < N && kb < K) ? B[kb + (size_t)jb * ldb] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TS; ++kk) acc += As[kk][threadIdx.x] * Bs[threadIdx.y][kk];
        __syncthreads();
    }
    if (i < M && j < N) {
        float* c = C + i + (size_t)j * ldc;
        *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;  // BLAS: C is not read when beta == 0
    }
}
