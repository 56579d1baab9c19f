// Rung 2: the naive kernel with a 1-D block whose consecutive threads take consecutive
// columns of one row of C: a warp reads one element of A (broadcast) and 32 consecutive
// elements of B, and writes 32 consecutive elements of C, so global accesses coalesce.
// Credit: kernel 2 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

template <unsigned int BLOCKSIZE>
__global__ void sgemm_gmem_coalescing(int M, int N, int K, float alpha,
                                      const float* __restrict__ A,
                                      const float* __restrict__ B, float beta,
                                      float* __restrict__ C) {
  const int row = blockIdx.x * BLOCKSIZE + threadIdx.x / BLOCKSIZE;
  const int col = blockIdx.y * BLOCKSIZE + threadIdx.x % BLOCKSIZE;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int i = 0; i < K; ++i) {
      acc += A[row * K + i] * B[i * N + col];
    }
    float* c = &C[row * N + col];
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}
