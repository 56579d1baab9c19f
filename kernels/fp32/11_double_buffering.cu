// Rung 11: double buffering, the seed's way (seed 004, kernel 11). Shared memory holds two
// BK-deep stages. Loading is split between the two halves of the block: the first half
// loads the even tiles into stage 0, the second half the odd tiles into stage 1, and each
// half loads while the other half is computing; every thread still computes every tile.
// Per pair of tiles (t, t+1):
//   phase 1: half 1 loads t+1 -> stage 1   | half 0 computes stage 0 (tile t)
//   phase 2: half 1 computes stage 0       | half 0 computes stage 1 (tile t+1)
//   phase 3: half 1 computes stage 1       | half 0 loads t+2 -> stage 0
// with a __syncthreads() after each phase. Unlike the seed, every barrier is reached by
// all threads at the same point (no __syncthreads() inside a divergent branch), and each
// stage is written only after the barrier that ends its last reads: stage 1 is written in
// phase 1, after the last reads in phase 3 of the previous pair; stage 0 in phase 3,
// after its last reads in phase 2. An odd number of tiles (K an odd multiple of BK) ends
// with a pair whose second tile is missing: nobody loads or computes stage 1 then.
// The tile loops reuse kernel 10's warptiling (As transposed, float4 everywhere).
// No bounds checks: the spec requires M % BM, N % BN, K % BK == 0 (and so 16-byte rows).
// Credit: kernel 11 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.

namespace db {

// Stage one BM x BK tile of A (transposed into As[k][m]) and one BK x BN tile of B,
// with the rowStrides of the half block that loads it.
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

}  // namespace db

template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int WM, unsigned int WN,
          unsigned int WNITER, unsigned int TM, unsigned int TN, unsigned int THREADS,
          unsigned int MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_double_buffering(int M, int N, int K, float alpha, const float* __restrict__ A,
                       const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr unsigned int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
  constexpr unsigned int WSUBM = WM / WMITER;
  constexpr unsigned int WSUBN = WN / WNITER;
  constexpr unsigned int LOADERS = THREADS / 2;  // each tile is loaded by half the block
  constexpr unsigned int rowStrideA = (LOADERS * 4) / BK;
  constexpr unsigned int rowStrideB = (LOADERS * 4) / BN;
  static_assert(LOADERS % 32 == 0, "the two halves must be whole warps");
  static_assert((BN / WN) * (BM / WM) == THREADS / 32, "one warp tile per warp");
  static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "32 threads per warp sub-tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as float4");

  __shared__ __align__(16) float As[2 * BM * BK];
  __shared__ __align__(16) float Bs[2 * BK * BN];
  float* const As0 = As;
  float* const As1 = As + BM * BK;
  float* const Bs0 = Bs;
  float* const Bs1 = Bs + BK * BN;

  const unsigned int tid = threadIdx.x;
  const unsigned int warpIdx = tid / 32;
  const unsigned int warpCol = warpIdx % (BN / WN);
  const unsigned int warpRow = warpIdx / (BN / WN);
  const unsigned int lane = tid % 32;
  const unsigned int threadColInWarp = lane % (WSUBN / TN);
  const unsigned int threadRowInWarp = lane / (WSUBN / TN);

  // Both halves use the same staging layout, as if the block had LOADERS threads.
  const bool secondHalf = tid >= LOADERS;  // warp-uniform
  const unsigned int lt = tid % LOADERS;
  const unsigned int innerRowA = lt / (BK / 4), innerColA = lt % (BK / 4);
  const unsigned int innerRowB = lt / (BN / 4), innerColB = lt % (BN / 4);

  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += (blockIdx.y * BM + warpRow * WM) * N + blockIdx.x * BN + warpCol * WN;

  float threadResults[WMITER * TM * WNITER * TN];
#pragma unroll
  for (unsigned int i = 0; i < WMITER * TM * WNITER * TN; ++i) threadResults[i] = 0.0f;
  float regM[WMITER * TM];
  float regN[WNITER * TN];

  const int numTiles = K / BK;

  if (!secondHalf)
    db::loadFromGmem<BM, BN, BK, rowStrideA, rowStrideB>(N, K, A, B, As0, Bs0, innerRowA,
                                                         innerColA, innerRowB, innerColB);
  __syncthreads();

  for (int t = 0; t < numTiles; t += 2) {
    const bool hasNext = t + 1 < numTiles;   // tile t+1 exists (stage 1 is used)
    const bool hasNext2 = t + 2 < numTiles;  // tile t+2 exists
    const float* At = A + t * BK;
    const float* Bt = B + t * BK * N;

    // phase 1
    if (secondHalf) {
      if (hasNext)
        db::loadFromGmem<BM, BN, BK, rowStrideA, rowStrideB>(
            N, K, At + BK, Bt + BK * N, As1, Bs1, innerRowA, innerColA, innerRowB, innerColB);
    } else {
      db::processFromSmem<BM, BN, BK, WM, WN, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
          regM, regN, threadResults, As0, Bs0, warpRow, warpCol, threadRowInWarp, threadColInWarp);
    }
    __syncthreads();  // stage 1 holds tile t+1

    // phase 2
    if (secondHalf) {
      db::processFromSmem<BM, BN, BK, WM, WN, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
          regM, regN, threadResults, As0, Bs0, warpRow, warpCol, threadRowInWarp, threadColInWarp);
    } else if (hasNext) {
      db::processFromSmem<BM, BN, BK, WM, WN, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
          regM, regN, threadResults, As1, Bs1, warpRow, warpCol, threadRowInWarp, threadColInWarp);
    }
    __syncthreads();  // nobody reads stage 0 any more

    // phase 3
    if (secondHalf) {
      if (hasNext)
        db::processFromSmem<BM, BN, BK, WM, WN, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
            regM, regN, threadResults, As1, Bs1, warpRow, warpCol, threadRowInWarp,
            threadColInWarp);
    } else if (hasNext2) {
      db::loadFromGmem<BM, BN, BK, rowStrideA, rowStrideB>(
          N, K, At + 2 * BK, Bt + 2 * BK * N, As0, Bs0, innerRowA, innerColA, innerRowB,
          innerColB);
    }
    __syncthreads();  // stage 0 holds tile t+2; nobody reads stage 1 any more
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
