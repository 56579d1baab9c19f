// Rung 3c: shared-memory tiling with 16x16 tiles and a 16x16 block (seed 003).
// Same technique as rung 3 with a quarter of the tile: 256 threads per block, so more
// blocks fit per SM, but each staged element is reused only 16 times instead of 32.
// Credit: our implementation of seed 003's "sub matrix shared memory" kernel (notes that follow Simon Boehm's
//   https://siboehm.com/articles/22/CUDA-MMM).

__global__ void sgemm_smem_16x16(int M, int N, int K, float alpha,
                                 const float* __restrict__ A,
                                 const float* __restrict__ B, float beta,
                                 float* __restrict__ C) {
  constexpr int TILE = 16;
  __shared__ float sa[TILE][TILE];
  __shared__ float sb[TILE][TILE];

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int bk = 0; bk < K; bk += TILE) {
    const int ka = bk + tx, kb = bk + ty;
    sa[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    sb[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();

#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      acc += sa[ty][j] * sb[j][tx];
    }
    __syncthreads();
  }

  if (row < M && col < N) {
    float* c = &C[row * N + col];
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}
