// Rung 3: shared-memory cache blocking. Each block owns a BLOCKSIZE x BLOCKSIZE tile of C
// and walks K in BLOCKSIZE-wide chunks: every thread stages one element of A and one of B
// in shared memory, then all threads reuse the whole chunk from there.
// Out-of-range elements are staged as zeros so any M, N, K works.
// Credit: kernel 3 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

template <unsigned int BLOCKSIZE>
__global__ void sgemm_smem_caching(int M, int N, int K, float alpha,
                                   const float* __restrict__ A,
                                   const float* __restrict__ B, float beta,
                                   float* __restrict__ C) {
  __shared__ float As[BLOCKSIZE * BLOCKSIZE];
  __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];

  // Block (cRow, cCol) as in the seed: blockIdx.x walks the rows of C.
  const int cRow = blockIdx.x;
  const int cCol = blockIdx.y;
  // threadCol is the fast index so the staging loads coalesce.
  const int threadCol = threadIdx.x % BLOCKSIZE;
  const int threadRow = threadIdx.x / BLOCKSIZE;
  const int row = cRow * BLOCKSIZE + threadRow;
  const int col = cCol * BLOCKSIZE + threadCol;

  float acc = 0.0f;
  for (int bk = 0; bk < K; bk += BLOCKSIZE) {
    const int ka = bk + threadCol;  // column of A this thread stages
    const int kb = bk + threadRow;  // row of B this thread stages
    As[threadRow * BLOCKSIZE + threadCol] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    Bs[threadRow * BLOCKSIZE + threadCol] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();  // the chunk is complete before anyone reads it

#pragma unroll
    for (unsigned int d = 0; d < BLOCKSIZE; ++d) {
      acc += As[threadRow * BLOCKSIZE + d] * Bs[d * BLOCKSIZE + threadCol];
    }
    __syncthreads();  // nobody overwrites the chunk while others still read it
  }

  if (row < M && col < N) {
    float* c = &C[row * N + col];
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}
