// Rung 1: one thread per element of C.
// x (the fast thread index) walks the rows of C, so the 32 threads of a warp read
// 32 different rows of A (stride K) and write C with stride N: nothing coalesces.
// That is the point of this rung; rung 2 only swaps the mapping.
// Credit: kernel 1 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

__global__ void sgemm_naive(int M, int N, int K, float alpha,
                            const float* __restrict__ A,
                            const float* __restrict__ B, float beta,
                            float* __restrict__ C) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;  // row of C
  const int y = blockIdx.y * blockDim.y + threadIdx.y;  // column of C
  if (x < M && y < N) {
    float acc = 0.0f;
    for (int i = 0; i < K; ++i) {
      acc += A[x * K + i] * B[i * N + y];
    }
    float* c = &C[x * N + y];
    // beta == 0 must not read C (it may hold NaN).
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}
