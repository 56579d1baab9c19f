// An HGEMM written elsewhere: fp16 inputs, fp32 accumulation, fp16 C, no alpha or beta (C = A @ B), and the
// pointers first: (A, B, C, M, N, K). Row-major A (M x K), B (K x N) and C (M x N).
#include <cuda_fp16.h>
#define TS 16

__global__ void hgemm_half_c(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ float As[TS][TS + 1];
    __shared__ float Bs[TS][TS + 1];
    const int row = blockIdx.y * TS + threadIdx.y, col = blockIdx.x * TS + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? __half2float(A[(size_t)row * K + ka]) : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? __half2float(B[(size_t)kb * N + col]) : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TS; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = __float2half(acc);
}
