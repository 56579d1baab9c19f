// Rung 5: 2D blocktiling. Each thread computes a TM x TN tile of C. Per K step it loads
// TM values of A and TN values of B from shared memory into registers (regM, regN) and
// does TM*TN FMAs from them: loads per result drop from ~1 to (TM+TN)/(TM*TN).
// Each thread stages several elements of A and B (strided rows). Out-of-range elements
// are staged as zeros and stores are guarded, so any M, N, K works.
// Credit: kernel 5 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int TM,
          unsigned int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN))
sgemm_blocktiling_2d(int M, int N, int K, float alpha,
                     const float* __restrict__ A, const float* __restrict__ B,
                     float beta, float* __restrict__ C) {
  constexpr unsigned int THREADS = (BM * BN) / (TM * TN);
  constexpr unsigned int strideA = THREADS / BK;  // rows of As staged per pass
  constexpr unsigned int strideB = THREADS / BN;  // rows of Bs staged per pass
  static_assert(THREADS % BK == 0 && BM % strideA == 0, "A staging must tile As");
  static_assert(THREADS % BN == 0 && BK % strideB == 0, "B staging must tile Bs");

  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];

  const int cRow = blockIdx.y;
  const int cCol = blockIdx.x;
  const unsigned int tid = threadIdx.x;
  const unsigned int threadCol = tid % (BN / TN);
  const unsigned int threadRow = tid / (BN / TN);
  // Consecutive threads stage consecutive columns: coalesced global loads.
  const unsigned int innerRowA = tid / BK, innerColA = tid % BK;
  const unsigned int innerRowB = tid / BN, innerColB = tid % BN;

  float threadResults[TM * TN];
#pragma unroll
  for (unsigned int i = 0; i < TM * TN; ++i) threadResults[i] = 0.0f;
  float regM[TM];
  float regN[TN];

  const int rowA0 = cRow * BM + innerRowA;
  const int colB = cCol * BN + innerColB;

  for (int bk = 0; bk < K; bk += BK) {
    const int ka = bk + innerColA;
#pragma unroll
    for (unsigned int off = 0; off < BM; off += strideA) {
      const int r = rowA0 + off;
      As[(innerRowA + off) * BK + innerColA] = (r < M && ka < K) ? A[r * K + ka] : 0.0f;
    }
#pragma unroll
    for (unsigned int off = 0; off < BK; off += strideB) {
      const int kb = bk + innerRowB + off;
      Bs[(innerRowB + off) * BN + innerColB] = (kb < K && colB < N) ? B[kb * N + colB] : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (unsigned int dot = 0; dot < BK; ++dot) {
#pragma unroll
      for (unsigned int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + dot];
#pragma unroll
      for (unsigned int i = 0; i < TN; ++i) regN[i] = Bs[dot * BN + threadCol * TN + i];
#pragma unroll
      for (unsigned int m = 0; m < TM; ++m)
#pragma unroll
        for (unsigned int n = 0; n < TN; ++n)
          threadResults[m * TN + n] += regM[m] * regN[n];
    }
    __syncthreads();
  }

#pragma unroll
  for (unsigned int m = 0; m < TM; ++m) {
    const int row = cRow * BM + threadRow * TM + m;
#pragma unroll
    for (unsigned int n = 0; n < TN; ++n) {
      const int col = cCol * BN + threadCol * TN + n;
      if (row < M && col < N) {
        float* c = &C[row * N + col];
        const float v = alpha * threadResults[m * TN + n];
        *c = (beta == 0.0f) ? v : v + beta * *c;
      }
    }
  }
}
