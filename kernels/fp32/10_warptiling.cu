// Rung 10: warptiling. Between the block tile (BM x BN) and the thread tile sits a warp
// tile (WM x WN): each warp owns one, and splits it into WMITER x WNITER sub-tiles of
// WSUBM x WSUBN in which its 32 threads each compute TM x TN. A warp then reads only its
// own slice of As/Bs (fewer distinct shared-memory addresses per load, better register
// reuse), and the WMITER x WNITER independent sub-tiles give the scheduler more ILP.
// No bounds checks: the spec requires M % BM, N % BN, K % BK == 0 (and so 16-byte rows).
// Credit: kernel 10 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

namespace wt {

// Stage one BM x BK tile of A (transposed into As[k][m]) and one BK x BN tile of B.
template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int rowStrideA,
          unsigned int rowStrideB>
__device__ __forceinline__ void loadFromGmem(int N, int K, const float* __restrict__ A,
                                             const float* __restrict__ B, float* As, float* Bs,
                                             unsigned int innerRowA, unsigned int innerColA,
                                             unsigned int innerRowB, unsigned int innerColB) {
#pragma unroll
  for (unsigned int off = 0; off + rowStrideA <= BM; off += rowStrideA) {
    const float4 t = *reinterpret_cast<const float4*>(&A[(innerRowA + off) * K + innerColA * 4]);
    As[(innerColA * 4 + 0) * BM + innerRowA + off] = t.x;
    As[(innerColA * 4 + 1) * BM + innerRowA + off] = t.y;
    As[(innerColA * 4 + 2) * BM + innerRowA + off] = t.z;
    As[(innerColA * 4 + 3) * BM + innerRowA + off] = t.w;
  }
#pragma unroll
  for (unsigned int off = 0; off + rowStrideB <= BK; off += rowStrideB) {
    *reinterpret_cast<float4*>(&Bs[(innerRowB + off) * BN + innerColB * 4]) =
        *reinterpret_cast<const float4*>(&B[(innerRowB + off) * N + innerColB * 4]);
  }
}

// One BK-deep step of the warp tile: per dot step, load the warp's register fragments
// (WMITER*TM values of A, WNITER*TN of B) and do their outer product.
template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int WM, unsigned int WN,
          unsigned int WMITER, unsigned int WNITER, unsigned int WSUBM, unsigned int WSUBN,
          unsigned int TM, unsigned int TN>
__device__ __forceinline__ void processFromSmem(float* regM, float* regN, float* threadResults,
                                                const float* As, const float* Bs,
                                                unsigned int warpRow, unsigned int warpCol,
                                                unsigned int threadRowInWarp,
                                                unsigned int threadColInWarp) {
#pragma unroll
  for (unsigned int dot = 0; dot < BK; ++dot) {
#pragma unroll
    for (unsigned int ws = 0; ws < WMITER; ++ws)
#pragma unroll
      for (unsigned int i = 0; i < TM; i += 4) {
        const float4 a = *reinterpret_cast<const float4*>(
            &As[dot * BM + warpRow * WM + ws * WSUBM + threadRowInWarp * TM + i]);
        regM[ws * TM + i + 0] = a.x; regM[ws * TM + i + 1] = a.y;
        regM[ws * TM + i + 2] = a.z; regM[ws * TM + i + 3] = a.w;
      }
#pragma unroll
    for (unsigned int ws = 0; ws < WNITER; ++ws)
#pragma unroll
      for (unsigned int i = 0; i < TN; i += 4) {
        const float4 b = *reinterpret_cast<const float4*>(
            &Bs[dot * BN + warpCol * WN + ws * WSUBN + threadColInWarp * TN + i]);
        regN[ws * TN + i + 0] = b.x; regN[ws * TN + i + 1] = b.y;
        regN[ws * TN + i + 2] = b.z; regN[ws * TN + i + 3] = b.w;
      }
#pragma unroll
    for (unsigned int m = 0; m < WMITER * TM; ++m)
#pragma unroll
      for (unsigned int n = 0; n < WNITER * TN; ++n)
        threadResults[m * (WNITER * TN) + n] += regM[m] * regN[n];
  }
}

}  // namespace wt

template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int WM, unsigned int WN,
          unsigned int WNITER, unsigned int TM, unsigned int TN, unsigned int THREADS,
          unsigned int MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_warptiling(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr unsigned int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
  constexpr unsigned int WSUBM = WM / WMITER;
  constexpr unsigned int WSUBN = WN / WNITER;
  constexpr unsigned int rowStrideA = (THREADS * 4) / BK;
  constexpr unsigned int rowStrideB = (THREADS * 4) / BN;
  static_assert((BN / WN) * (BM / WM) == THREADS / 32, "one warp tile per warp");
  static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "32 threads per warp sub-tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as float4");

  __shared__ __align__(16) float As[BK * BM];
  __shared__ __align__(16) float Bs[BK * BN];

  const unsigned int tid = threadIdx.x;
  const unsigned int warpIdx = tid / 32;
  const unsigned int warpCol = warpIdx % (BN / WN);
  const unsigned int warpRow = warpIdx / (BN / WN);
  const unsigned int lane = tid % 32;
  const unsigned int threadColInWarp = lane % (WSUBN / TN);
  const unsigned int threadRowInWarp = lane / (WSUBN / TN);

  const unsigned int innerRowA = tid / (BK / 4), innerColA = tid % (BK / 4);
  const unsigned int innerRowB = tid / (BN / 4), innerColB = tid % (BN / 4);

  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += (blockIdx.y * BM + warpRow * WM) * N + blockIdx.x * BN + warpCol * WN;

  float threadResults[WMITER * TM * WNITER * TN];
#pragma unroll
  for (unsigned int i = 0; i < WMITER * TM * WNITER * TN; ++i) threadResults[i] = 0.0f;
  float regM[WMITER * TM];
  float regN[WNITER * TN];

  for (int bk = 0; bk < K; bk += BK) {
    wt::loadFromGmem<BM, BN, BK, rowStrideA, rowStrideB>(N, K, A, B, As, Bs, innerRowA,
                                                         innerColA, innerRowB, innerColB);
    __syncthreads();  // tile complete before anyone reads it
    wt::processFromSmem<BM, BN, BK, WM, WN, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
        regM, regN, threadResults, As, Bs, warpRow, warpCol, threadRowInWarp, threadColInWarp);
    A += BK;
    B += BK * N;
    __syncthreads();  // everyone done reading before the next tile overwrites it
  }

#pragma unroll
  for (unsigned int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (unsigned int wn = 0; wn < WNITER; ++wn) {
      float* C_sub = C + (wm * WSUBM) * N + wn * WSUBN;
#pragma unroll
      for (unsigned int i = 0; i < TM; ++i)
#pragma unroll
        for (unsigned int j = 0; j < TN; j += 4) {
          float* c = &C_sub[(threadRowInWarp * TM + i) * N + threadColInWarp * TN + j];
          const float* r = &threadResults[(wm * TM + i) * (WNITER * TN) + wn * TN + j];
          float4 v = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
          if (beta != 0.0f) {  // beta == 0 must not read C
            const float4 old = *reinterpret_cast<const float4*>(c);
            v.x += beta * old.x; v.y += beta * old.y; v.z += beta * old.z; v.w += beta * old.w;
          }
          *reinterpret_cast<float4*>(c) = v;
        }
    }
}
