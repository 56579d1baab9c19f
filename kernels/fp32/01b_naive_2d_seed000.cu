// Rung 1b: the naive kernel as seeds 000/002 write it: threadIdx.x walks the columns
// of C, so a warp reads one element of A (broadcast) and 32 consecutive elements of B
// and C. It is already coalesced; compare it with rung 1 to see what the mapping costs.
// Credit: our implementation of the naive kernel of seed 000 (GEMM notes; its listing is ifromeast/cuda_learning's
//   03_gemm/sgemm_naive.cu) and of seed 002's naiveSgemm.

__global__ void sgemm_naive_2d(int M, int N, int K, float alpha,
                               const float* __restrict__ A,
                               const float* __restrict__ B, float beta,
                               float* __restrict__ C) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;  // column of C
  const int m = blockIdx.y * blockDim.y + threadIdx.y;  // row of C
  if (m < M && n < N) {
    float acc = 0.0f;
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      acc += A[m * K + k] * B[k * N + n];
    }
    float* c = &C[m * N + n];
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}
