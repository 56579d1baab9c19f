// Rung 3b: shared-memory tiling with two results per thread (seed 002, regSgemm ver1).
// The 32x32 tiles of rung 3 are kept but the block shrinks to 32x16 threads: each thread
// stages two elements of A and of B and computes rows ty and ty+16 of its column, so the
// B value it reads from shared memory is used twice (more independent FMAs per load).
// Credit: our implementation of seed 002's regSgemm ver1 (its notes "cuda_learning_03").

__global__ void sgemm_smem_two_results(int M, int N, int K, float alpha,
                                       const float* __restrict__ A,
                                       const float* __restrict__ B, float beta,
                                       float* __restrict__ C) {
  constexpr int TILE = 32;
  constexpr int HALF = 16;  // blockDim.y
  __shared__ float sa[TILE][TILE];
  __shared__ float sb[TILE][TILE];

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row0 = blockIdx.y * TILE + ty;  // second result is row0 + HALF
  const int row1 = row0 + HALF;
  const int col = blockIdx.x * TILE + tx;

  float val0 = 0.0f, val1 = 0.0f;
  for (int bk = 0; bk < K; bk += TILE) {
    const int ka = bk + tx;
    sa[ty][tx] = (row0 < M && ka < K) ? A[row0 * K + ka] : 0.0f;
    sa[ty + HALF][tx] = (row1 < M && ka < K) ? A[row1 * K + ka] : 0.0f;
    const int kb0 = bk + ty, kb1 = bk + ty + HALF;
    sb[ty][tx] = (kb0 < K && col < N) ? B[kb0 * N + col] : 0.0f;
    sb[ty + HALF][tx] = (kb1 < K && col < N) ? B[kb1 * N + col] : 0.0f;
    __syncthreads();

#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      const float b = sb[j][tx];
      val0 += sa[ty][j] * b;
      val1 += sa[ty + HALF][j] * b;
    }
    __syncthreads();
  }

  if (col < N) {
    if (row0 < M) {
      float* c = &C[row0 * N + col];
      *c = (beta == 0.0f) ? alpha * val0 : alpha * val0 + beta * *c;
    }
    if (row1 < M) {
      float* c = &C[row1 * N + col];
      *c = (beta == 0.0f) ? alpha * val1 : alpha * val1 + beta * *c;
    }
  }
}
