// Rung 4: 1D blocktiling. Each thread computes TM results down one column of the block
// tile, so the B value it reads from shared memory (tmpB) is reused TM times; this cuts
// shared-memory loads per result from ~2 to ~(1 + 1/TM).
// Thread count = BM*BN/TM = BM*BK = BN*BK: every thread stages exactly one element of A
// and one of B per K step. Out-of-range elements are staged as zeros (any M, N, K).
// Credit: kernel 4 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int TM>
__global__ void __launch_bounds__(BM * BN / TM)
sgemm_blocktiling_1d(int M, int N, int K, float alpha,
                     const float* __restrict__ A, const float* __restrict__ B,
                     float beta, float* __restrict__ C) {
  static_assert(BM * BK == BM * BN / TM && BN * BK == BM * BN / TM,
                "one staged element of A and of B per thread");
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];

  // blockIdx.x walks columns so that consecutive blocks share the same rows of A
  // and read neighbouring columns of B (better L2 locality, as the seed notes).
  const int cRow = blockIdx.y;
  const int cCol = blockIdx.x;
  const unsigned int tid = threadIdx.x;

  const unsigned int threadCol = tid % BN;
  const unsigned int threadRow = tid / BN;  // owns rows threadRow*TM .. +TM-1
  const unsigned int innerColA = tid % BK, innerRowA = tid / BK;
  const unsigned int innerColB = tid % BN, innerRowB = tid / BN;

  const int rowA = cRow * BM + innerRowA;
  const int colB = cCol * BN + innerColB;

  float threadResults[TM];
#pragma unroll
  for (unsigned int i = 0; i < TM; ++i) threadResults[i] = 0.0f;

  for (int bk = 0; bk < K; bk += BK) {
    const int ka = bk + innerColA, kb = bk + innerRowB;
    As[innerRowA * BK + innerColA] = (rowA < M && ka < K) ? A[rowA * K + ka] : 0.0f;
    Bs[innerRowB * BN + innerColB] = (kb < K && colB < N) ? B[kb * N + colB] : 0.0f;
    __syncthreads();

#pragma unroll
    for (unsigned int dot = 0; dot < BK; ++dot) {
      const float tmpB = Bs[dot * BN + threadCol];  // reused TM times
#pragma unroll
      for (unsigned int r = 0; r < TM; ++r) {
        threadResults[r] += As[(threadRow * TM + r) * BK + dot] * tmpB;
      }
    }
    __syncthreads();
  }

  const int col = cCol * BN + threadCol;
  if (col < N) {
#pragma unroll
    for (unsigned int r = 0; r < TM; ++r) {
      const int row = cRow * BM + threadRow * TM + r;
      if (row < M) {
        float* c = &C[row * N + col];
        *c = (beta == 0.0f) ? alpha * threadResults[r]
                            : alpha * threadResults[r] + beta * *c;
      }
    }
  }
}
