// Rung 7: kernel 6 with Bs "linearized" to avoid shared-memory bank conflicts.
// In kernel 6, the threads of a warp read Bs at threadCol*TN: addresses TN floats apart,
// so several threads hit the same bank. Here element (k, n) of the B tile is stored at
//   Bs[(k*TN + n%TN) * (BN/TN) + n/TN]
// i.e. as [k][j][threadCol]: for a fixed (k, j), the threads of a warp read consecutive
// words (no conflict). The price: a thread's TN values are BN/TN words apart, so they are
// read with scalar loads instead of LDS.128. A is as in kernel 6 (transposed, float4).
// No bounds checks: the spec requires M % BM, N % BN, K % BK == 0 (and so 16-byte rows).
// Credit: kernel 7 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int TM,
          unsigned int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN))
sgemm_bank_conflicts_linearize(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr unsigned int THREADS = (BM * BN) / (TM * TN);
  constexpr unsigned int rowStrideA = (THREADS * 4) / BK;  // rows of A staged per pass
  constexpr unsigned int rowStrideB = (THREADS * 4) / BN;  // rows of B staged per pass
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as float4");
  static_assert(BM % rowStrideA == 0 && BK % rowStrideB == 0, "staging must tile As/Bs");

  __shared__ __align__(16) float As[BK * BM];  // transposed: As[k * BM + m]
  __shared__ float Bs[BK * BN];  // linearized, see above

  const unsigned int tid = threadIdx.x;
  const unsigned int threadCol = tid % (BN / TN);
  const unsigned int threadRow = tid / (BN / TN);
  const unsigned int innerRowA = tid / (BK / 4), innerColA = tid % (BK / 4);
  const unsigned int innerRowB = tid / (BN / 4), innerColB = tid % (BN / 4);

  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += blockIdx.y * BM * N + blockIdx.x * BN;

  float threadResults[TM * TN];
#pragma unroll
  for (unsigned int i = 0; i < TM * TN; ++i) threadResults[i] = 0.0f;
  float regM[TM];
  float regN[TN];

  for (int bk = 0; bk < K; bk += BK) {
#pragma unroll
    for (unsigned int off = 0; off < BM; off += rowStrideA) {
      const float4 t = *reinterpret_cast<const float4*>(&A[(innerRowA + off) * K + innerColA * 4]);
      // Transpose on the way in: the 4 k-values go to 4 different rows of As.
      As[(innerColA * 4 + 0) * BM + innerRowA + off] = t.x;
      As[(innerColA * 4 + 1) * BM + innerRowA + off] = t.y;
      As[(innerColA * 4 + 2) * BM + innerRowA + off] = t.z;
      As[(innerColA * 4 + 3) * BM + innerRowA + off] = t.w;
    }
#pragma unroll
    for (unsigned int off = 0; off < BK; off += rowStrideB) {
      const float4 t = *reinterpret_cast<const float4*>(&B[(innerRowB + off) * N + innerColB * 4]);
      const float v[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
      for (unsigned int i = 0; i < 4; ++i) {
        const unsigned int n = innerColB * 4 + i;
        Bs[((innerRowB + off) * TN + n % TN) * (BN / TN) + n / TN] = v[i];
      }
    }
    __syncthreads();
    A += BK;
    B += BK * N;

#pragma unroll
    for (unsigned int dot = 0; dot < BK; ++dot) {
#pragma unroll
      for (unsigned int i = 0; i < TM; i += 4) {
        const float4 a = *reinterpret_cast<const float4*>(&As[dot * BM + threadRow * TM + i]);
        regM[i] = a.x; regM[i + 1] = a.y; regM[i + 2] = a.z; regM[i + 3] = a.w;
      }
#pragma unroll
      for (unsigned int j = 0; j < TN; ++j) regN[j] = Bs[(dot * TN + j) * (BN / TN) + threadCol];
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
#pragma unroll
    for (unsigned int n = 0; n < TN; n += 4) {
      float* c = &C[(threadRow * TM + m) * N + threadCol * TN + n];
      const float* r = &threadResults[m * TN + n];
      float4 v = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
      if (beta != 0.0f) {  // beta == 0 must not read C
        const float4 old = *reinterpret_cast<const float4*>(c);
        v.x += beta * old.x; v.y += beta * old.y; v.z += beta * old.z; v.w += beta * old.w;
      }
      *reinterpret_cast<float4*>(c) = v;
    }
  }
}
