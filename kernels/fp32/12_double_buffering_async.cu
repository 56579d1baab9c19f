// Rung 12: double buffering with asynchronous copies (seed 004, kernel 12).
// Two shared-memory stages and two cuda::barrier objects, "front" (the stage being
// computed) and "back" (the stage being filled). Every iteration issues
// cuda::memcpy_async for tile t+1 into the back stage, waits on the front barrier for
// tile t, computes it, then swaps front and back. The copies go global -> shared without
// passing through registers (cp.async), so they overlap the math of the current tile.
// Credit: kernel 12 of Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance"
//   (https://siboehm.com/articles/22/CUDA-MMM; seed 004 translates it); our implementation.
//
// Differences from the seed, and why:
//  - memcpy_async cannot transpose, so As keeps A's layout ([BM][BK], rows padded so that
//    the row stride is an odd number of 16-byte words). A thread reads 4 consecutive k of
//    one row with one LDS.128, i.e. A comes in with as many 128-bit loads as when As is
//    transposed. Within a warp sub-tile a thread's TM rows are interleaved
//    (i*(WSUBM/TM) + threadRowInWarp), so the 8 rows a warp reads at once are
//    consecutive and hit 8 different 16-byte bank groups (no conflicts).
//  - On sm_90, cuda::memcpy_async turns a 16-byte-aligned copy into a TMA bulk copy plus
//    an expect_tx per call, which is slow for 16-byte pieces; declaring 8-byte alignment
//    there keeps the copies on the cp.async path (2 x 8 bytes per 16-byte piece).
//  - A __syncthreads() at the end of every iteration (as in the seed) guarantees that no
//    thread refills a stage, or re-arms its barrier, while another is still reading it.
// No bounds checks: the spec requires M % BM, N % BN, K % BK == 0 (and so 16-byte rows).

// This kernel needs none of CCCL's extended float types; keeping their headers out
// (cuda_fp16/bf16/fp8/...) avoids NVRTC failures when CCCL and the toolkit's headers
// come from different CUDA versions.
#ifndef CCCL_DISABLE_FP16_SUPPORT
#define CCCL_DISABLE_FP16_SUPPORT
#endif
#include <cuda/barrier>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>

namespace dba {

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
constexpr unsigned int COPY_ALIGN = 8;
#else
constexpr unsigned int COPY_ALIGN = 16;
#endif

typedef cuda::barrier<cuda::thread_scope_block> block_barrier;

// Issue this thread's share of the async copies of one BM x BK tile of A and one BK x BN
// tile of B (16-byte pieces, consecutive threads on consecutive pieces of a row).
template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int LDA,
          unsigned int LDB, unsigned int THREADS>
__device__ __forceinline__ void loadFromGmem(int N, int K, const float* A, const float* B,
                                             float* As, float* Bs, unsigned int tid,
                                             block_barrier& bar) {
  constexpr unsigned int PIECES_A = BM * BK / 4;
  constexpr unsigned int PIECES_B = BK * BN / 4;
#pragma unroll
  for (unsigned int i = 0; i < PIECES_A / THREADS; ++i) {
    const unsigned int p = tid + i * THREADS;
    const unsigned int row = p / (BK / 4), col = (p % (BK / 4)) * 4;
    cuda::memcpy_async(&As[row * LDA + col], &A[row * K + col],
                       cuda::aligned_size_t<COPY_ALIGN>(16), bar);
  }
#pragma unroll
  for (unsigned int i = 0; i < PIECES_B / THREADS; ++i) {
    const unsigned int p = tid + i * THREADS;
    const unsigned int row = p / (BN / 4), col = (p % (BN / 4)) * 4;
    cuda::memcpy_async(&Bs[row * LDB + col], &B[row * N + col],
                       cuda::aligned_size_t<COPY_ALIGN>(16), bar);
  }
}

// One BK-deep step of the warp tile, 4 values of k at a time: per row of A one LDS.128
// gives 4 k-values; per k, the B fragment is WNITER*TN/4 LDS.128.
template <unsigned int BK, unsigned int LDA, unsigned int LDB, unsigned int WMITER,
          unsigned int WNITER, unsigned int WSUBM, unsigned int WSUBN, unsigned int TM,
          unsigned int TN>
__device__ __forceinline__ void processFromSmem(float* threadResults, const float* As,
                                                const float* Bs, unsigned int rowBase,
                                                unsigned int colBase) {
  constexpr unsigned int ROWSTEP = WSUBM / TM;  // distance between a thread's rows
#pragma unroll
  for (unsigned int k0 = 0; k0 < BK; k0 += 4) {
    float regM[WMITER * TM][4];
#pragma unroll
    for (unsigned int ws = 0; ws < WMITER; ++ws)
#pragma unroll
      for (unsigned int i = 0; i < TM; ++i) {
        const float4 a = *reinterpret_cast<const float4*>(
            &As[(rowBase + ws * WSUBM + i * ROWSTEP) * LDA + k0]);
        regM[ws * TM + i][0] = a.x; regM[ws * TM + i][1] = a.y;
        regM[ws * TM + i][2] = a.z; regM[ws * TM + i][3] = a.w;
      }
#pragma unroll
    for (unsigned int kk = 0; kk < 4; ++kk) {
      float regN[WNITER * TN];
#pragma unroll
      for (unsigned int ws = 0; ws < WNITER; ++ws)
#pragma unroll
        for (unsigned int j = 0; j < TN; j += 4) {
          const float4 b = *reinterpret_cast<const float4*>(
              &Bs[(k0 + kk) * LDB + colBase + ws * WSUBN + j]);
          regN[ws * TN + j + 0] = b.x; regN[ws * TN + j + 1] = b.y;
          regN[ws * TN + j + 2] = b.z; regN[ws * TN + j + 3] = b.w;
        }
#pragma unroll
      for (unsigned int m = 0; m < WMITER * TM; ++m)
#pragma unroll
        for (unsigned int n = 0; n < WNITER * TN; ++n)
          threadResults[m * (WNITER * TN) + n] += regM[m][kk] * regN[n];
    }
  }
}

}  // namespace dba

template <unsigned int BM, unsigned int BN, unsigned int BK, unsigned int WM, unsigned int WN,
          unsigned int WNITER, unsigned int TM, unsigned int TN, unsigned int THREADS,
          unsigned int MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_double_buffering_async(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr unsigned int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
  constexpr unsigned int WSUBM = WM / WMITER;
  constexpr unsigned int WSUBN = WN / WNITER;
  constexpr unsigned int ROWSTEP = WSUBM / TM;
  // Row stride of As in 16-byte words must be odd for conflict-free LDS.128 across rows.
  constexpr unsigned int LDA = BK + (((BK / 4) % 2 == 0) ? 4 : 0);
  constexpr unsigned int LDB = BN;
  static_assert(BK % 4 == 0 && BN % 4 == 0, "tiles are copied in 16-byte pieces");
  static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0,
                "every thread copies the same number of pieces");
  static_assert((BN / WN) * (BM / WM) == THREADS / 32, "one warp tile per warp");
  static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "32 threads per warp sub-tile");
  static_assert(TN % 4 == 0, "B fragments are read as float4");

  __shared__ __align__(16) float As[2 * BM * LDA];
  __shared__ __align__(16) float Bs[2 * BK * LDB];
#pragma nv_diag_suppress static_var_with_dynamic_init  // initialised below, by init()
  __shared__ dba::block_barrier barriers[2];
#pragma nv_diag_default static_var_with_dynamic_init

  auto block = cooperative_groups::this_thread_block();
  if (block.thread_rank() == 0) {
    init(&barriers[0], block.size());
    init(&barriers[1], block.size());
  }
  __syncthreads();  // barriers initialised before anyone uses them
  dba::block_barrier* frontBarrier = &barriers[0];
  dba::block_barrier* backBarrier = &barriers[1];

  const unsigned int tid = threadIdx.x;
  const unsigned int warpIdx = tid / 32;
  const unsigned int warpCol = warpIdx % (BN / WN);
  const unsigned int warpRow = warpIdx / (BN / WN);
  const unsigned int lane = tid % 32;
  const unsigned int threadColInWarp = lane % (WSUBN / TN);
  const unsigned int threadRowInWarp = lane / (WSUBN / TN);
  // First row (within the block tile) and first column of this thread's fragments.
  const unsigned int rowBase = warpRow * WM + threadRowInWarp;
  const unsigned int colBase = warpCol * WN + threadColInWarp * TN;

  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;

  float threadResults[WMITER * TM * WNITER * TN];
#pragma unroll
  for (unsigned int i = 0; i < WMITER * TM * WNITER * TN; ++i) threadResults[i] = 0.0f;

  const int numTiles = K / BK;
  unsigned int stage = 0;  // stage of the front (current) tile

  dba::loadFromGmem<BM, BN, BK, LDA, LDB, THREADS>(N, K, A, B, As, Bs, tid, *frontBarrier);

  for (int t = 0; t < numTiles; ++t) {
    if (t + 1 < numTiles) {
      // Prefetch tile t+1 into the back stage; it lands while we compute tile t.
      dba::loadFromGmem<BM, BN, BK, LDA, LDB, THREADS>(
          N, K, A + (t + 1) * BK, B + (t + 1) * BK * N, As + (stage ^ 1) * BM * LDA,
          Bs + (stage ^ 1) * BK * LDB, tid, *backBarrier);
    }
    frontBarrier->arrive_and_wait();  // all of tile t (every thread's copies) has landed
    dba::processFromSmem<BK, LDA, LDB, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
        threadResults, As + stage * BM * LDA, Bs + stage * BK * LDB, rowBase, colBase);
    // Nobody may refill this stage (next iteration) while others still read it.
    __syncthreads();
    dba::block_barrier* tmp = frontBarrier;
    frontBarrier = backBarrier;
    backBarrier = tmp;
    stage ^= 1;
  }

  C += (blockIdx.y * BM) * N + blockIdx.x * BN;
#pragma unroll
  for (unsigned int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (unsigned int i = 0; i < TM; ++i) {
      float* c_row = C + (rowBase + wm * WSUBM + i * ROWSTEP) * N + colBase;
#pragma unroll
      for (unsigned int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (unsigned int j = 0; j < TN; j += 4) {
          float* c = c_row + wn * WSUBN + j;
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
