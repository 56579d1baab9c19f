// A kernel split over files: its helpers come from include/tile_load.cuh (the spec's include_dirs), its tile
// size from a define, and it is built with extra nvcc flags. The standard eight arguments, row-major.
#include "tile_load.cuh"

extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A, const float* B,
                                       float beta, float* C) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = load_or_zero(A, row, k0 + threadIdx.x, M, K);
        Bs[threadIdx.y][threadIdx.x] = load_or_zero(B, k0 + threadIdx.y, col, K, N);
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) {
        float* c = C + (size_t)row * N + col;
        *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
    }
}
