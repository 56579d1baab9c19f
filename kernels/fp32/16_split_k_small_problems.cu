// Rung 16: split-K for problems of fewer tiles than SMs, any M, N, K >= 1.
// Credit: split-K with a serial, deterministic reduction, as NVIDIA CUTLASS's serial split-K; our implementation.
//
// Rung 15 computes one 128 x 256 tile of C per block over the whole of K. At 1000 x 1000 x 1000 that is 32 blocks
// for the H100's 132 SMs: three quarters of the GPU idle, 35.6% of cuBLAS. Rung 16 keeps rung 15's block (its copies,
// fragments, FFMA order and epilogues, included from its file) and splits the K loop over gridDim.z = S slices:
//  1. The spec picks S at each shape (its `decomposition`): as many slices as one wave has room for, SMS * MINBLOCKS
//     blocks over the tiles, each slice at least SPLIT_MIN_KTILES k-tiles deep; S = 1 when the tiles fill a wave
//     (2048 and up with the spec's defaults: then the launch runs rung 15's block at rung 16's parameters, its
//     128 x 128 tile rather than rung 15's 128 x 256). The run's note shows TILES and SPLIT_K.
//  2. Slice s computes k-tiles [s * KT / S, (s + 1) * KT / S) of KT = cdiv(K, BK): sizes differ by at most one.
//     The partial k-tile is the first one of slice 0 (zero-filled before k = 0, as in rung 15).
//  3. A deterministic, serial reduction in C (CUTLASS's serial split-K): slice 0 stores alpha * acc + beta * C
//     (C unread when beta == 0), slice s > 0 waits until the tile's flag says s, then stores C + alpha * acc, and
//     raises the flag to s + 1 (release after the block's stores); the last slice sets it back to 0, so the next
//     launch starts clean. The order of the additions is fixed: the same inputs give the same bits every launch.
//     No workspace: the eight standard arguments have none, and the partial sums travel through C in L2.
//  4. Progress: a slice waits only on the slice before it of its tile, a block of lower linear index (z is the
//     slowest dimension), which the GPU dispatches first; with S > 1 the grid is one wave (TILES * S <= SMS *
//     MINBLOCKS), so every block is resident anyway.
// Limits: tiles of a split launch have a flag each (SPLIT_FLAGS; the spec's rule splits no launch of more tiles, and
// the kernel traps rather than race); one split launch at a time per module (the flags are the module's).

#include "15_interleaved_copies_any_shape.cu"

namespace sk16 {

constexpr unsigned SPLIT_FLAGS = 4096;  // the spec's SPLIT_FLAGS
__device__ unsigned tileFlags[SPLIT_FLAGS];  // zero at module load; every split launch leaves them zero

__device__ __forceinline__ unsigned loadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void storeRelease(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// Rung 15's block (il15::gemm) over the k-tiles of this block's slice, then its share of the serial reduction
// (split launches only: gridDim.z > 1).
template <bool VECB, unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY,
          unsigned THREADS, unsigned STAGES, unsigned GROUP_M>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C,
                                     float* smem, bool vecC) {
  constexpr unsigned WTX = 32 / WTY;
  constexpr unsigned LDA = BM + 4;
  constexpr unsigned WARPS_N = BN / (NI * 4 * WTX);
  constexpr unsigned STAGE = BK * LDA + BK * BN;  // floats per stage: As[BK][BM + 4], Bs[BK][BN]
  using Cp = il15::Copies<VECB, BM, BN, BK, THREADS>;

  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
  const int perGroup = GROUP_M * tilesN;
  const int bid = blockIdx.x;
  const int firstM = (bid / perGroup) * GROUP_M;
  const int groupRows = min(tilesM - firstM, int(GROUP_M));
  const int m0 = (firstM + (bid % perGroup) % groupRows) * BM;
  const int n0 = ((bid % perGroup) / groupRows) * BN;

  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned rowBase = (warp / WARPS_N) * (MI * 4 * WTY) + (lane / WTX) * 4;
  const unsigned colBase = (warp % WARPS_N) * (NI * 4 * WTX) + (lane % WTX) * 4;
  const unsigned sBase = il15::smemAddr(smem);

  float acc[MI * 4][NI * 4];
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i)
#pragma unroll
    for (unsigned j = 0; j < NI * 4; ++j) acc[i][j] = 0.f;

  // This slice's k-tiles: [first, first + numTiles) of allTiles; tile 0 starts at k0 <= 0.
  const unsigned slice = blockIdx.z, slices = gridDim.z;
  const int allTiles = (K + BK - 1) / BK;
  const int k0 = K - allTiles * int(BK);
  const int first = int((long long)slice * allTiles / slices);
  const int numTiles = int((long long)(slice + 1) * allTiles / slices) - first;
  const int kStart = k0 + first * int(BK);  // < 0 only for slice 0's partial tile, whose rows k < 0 are zero-filled
  Cp cp(M, N, K, m0, n0, tid);
  const char* aT = reinterpret_cast<const char*>(A + (long long)m0 * K + kStart);
  const char* bT = reinterpret_cast<const char*>(B + (long long)kStart * N + n0);
  // Prologue, main loop and barriers as rung 15 (its file says why each is where it is), restated over this slice:
  // moved into a function both rungs call, they compiled to other code (rung 15: 219 registers instead of 215,
  // nvcc 13.0), and rung 15's timings on the H100 are for the code as it stands.
#pragma unroll
  for (unsigned s = 0; s + 1 < STAGES; ++s) {
    if (int(s) < numTiles) {
#pragma unroll
      for (unsigned c = 0; c < Cp::ALL; ++c) {
        if (s == 0)
          cp.template copy<true>(c, sBase, aT, bT, kStart, A, B);
        else
          cp.template copy<false>(c, sBase + s * STAGE * 4, aT, bT, 0, A, B);
      }
      aT += BK * 4;
      bT += (long long)BK * N * 4;
    }
    il15::commit();
  }
  il15::waitGroups<STAGES - 2>();
  __syncthreads();

  unsigned readOff = 0, writeOff = (STAGES - 1) * STAGE;
  float4 fa[2][MI], fb[2][NI];
#pragma unroll
  for (unsigned s = 0; s < MI; ++s) fa[0][s] = *reinterpret_cast<const float4*>(&smem[rowBase + s * 4 * WTY]);
#pragma unroll
  for (unsigned s = 0; s < NI; ++s)
    fb[0][s] = *reinterpret_cast<const float4*>(&smem[BK * LDA + colBase + s * 4 * WTX]);

  for (int t = 0; t < numTiles; ++t) {
    const bool copying = t + int(STAGES) - 1 < numTiles;
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      const float* rs = smem + readOff;
      const unsigned kn = (kk + 1) % BK;
#pragma unroll
      for (unsigned s = 0; s < MI; ++s)
        fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&rs[kn * LDA + rowBase + s * 4 * WTY]);
#pragma unroll
      for (unsigned s = 0; s < NI; ++s)
        fb[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&rs[BK * LDA + kn * BN + colBase + s * 4 * WTX]);
      if (kk < Cp::STEPS && copying) {
#pragma unroll
        for (unsigned c = kk * Cp::PER_STEP; c < (kk + 1) * Cp::PER_STEP; ++c)
          if (c < Cp::ALL) cp.template copy<false>(c, sBase + writeOff * 4, aT, bT, 0, A, B);
      }
      const float4* a4 = fa[kk & 1];
      const float4* b4 = fb[kk & 1];
#pragma unroll
      for (unsigned i = 0; i < MI * 4; ++i) {
        const float4 av = a4[i / 4];
        const float a = (i % 4 == 0) ? av.x : (i % 4 == 1) ? av.y : (i % 4 == 2) ? av.z : av.w;
#pragma unroll
        for (unsigned jj = 0; jj < NI * 4; ++jj) {
          const unsigned j = (i % 2 == 0) ? jj : NI * 4 - 1 - jj;
          const float4 bv = b4[j / 4];
          const float b = (j % 4 == 0) ? bv.x : (j % 4 == 1) ? bv.y : (j % 4 == 2) ? bv.z : bv.w;
          acc[i][j] += a * b;
        }
      }
      if (kk == BK - 2) {
        il15::commit();
        il15::waitGroups<STAGES - 2>();
        __syncthreads();
        writeOff = readOff;
        readOff = readOff + STAGE == STAGES * STAGE ? 0 : readOff + STAGE;
        if (copying) {
          aT += BK * 4;
          bT += (long long)BK * N * 4;
        }
      }
    }
  }
  il15::waitGroups<0>();

  // The serial reduction: wait for the slices before this one, add this slice's part, hand the tile on.
  unsigned* flag = &tileFlags[blockIdx.x];
  if (slice > 0) {
    if (tid == 0)
      while (loadAcquire(flag) != slice) __nanosleep(64);
    __syncthreads();  // the acquire by thread 0, then the barrier: every thread's reads of C see the earlier slices
  }
  const float b = slice == 0 ? beta : 1.f;  // slice 0 scales the old C; the others add to the running sum
  if (vecC) {
    const int mBase = m0 + int(rowBase), nBase = n0 + int(colBase);
    if (n0 + int(BN) <= N)
      il15::storeTile<false, MI, NI, WTY>(acc, C, M, N, mBase, nBase, alpha, b);
    else
      il15::storeTile<true, MI, NI, WTY>(acc, C, M, N, mBase, nBase, alpha, b);
  } else {
    __syncthreads();
    il15::stageTile<MI, NI, WTY>(acc, C, M, N, m0 + int(rowBase - (lane / WTX) * 4),
                                 n0 + int(colBase - (lane % WTX) * 4), alpha, b,
                                 smem + warp * (WTY * (NI * 4 * WTX + (WTX == 4 ? 16 : 0))), lane);
  }
  __syncthreads();  // every thread's stores of C are issued; thread 0's release then covers them (cumulativity)
  if (tid == 0) {
    __threadfence();
    storeRelease(flag, slice + 1 == slices ? 0u : slice + 1);
  }
}

template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY, unsigned THREADS,
          unsigned STAGES, unsigned GROUP_M>
__device__ __forceinline__ void blockTile(int M, int N, int K, float alpha, const float* __restrict__ A,
                                          const float* __restrict__ B, float beta, float* __restrict__ C,
                                          float* smem) {
  static_assert(BK == 8, "a warp's 4-byte copies of A cover 4 rows x 8 k: conflict-free with LDA = BM + 4");
  static_assert(BM % 32 == 0, "LDA = BM + 4 must be 4 mod 32");
  static_assert(WTY == 4 || WTY == 8, "fragments of a warp: WTY and 32 / WTY float4, at most 8 each");
  static_assert(BM % (MI * 4 * WTY) == 0 && BN % (NI * 4 * (32 / WTY)) == 0, "warp tiles must tile the block");
  static_assert((BM / (MI * 4 * WTY)) * (BN / (NI * 4 * (32 / WTY))) * 32 == THREADS, "one warp tile per warp");
  static_assert((BM * BK) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole copies per thread");
  static_assert(STAGES >= 3, "one stage written while another is read and a third lands");
  static_assert(THREADS / 32 * WTY * (NI * 4 * (32 / WTY) + (WTY == 8 ? 16 : 0)) <= STAGES * BK * (BM + BN + 4),
                "the warps' staging regions of the epilogue fit in the stages");
  const bool vecC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
  if (N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0)
    gemm<true, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem, vecC);
  else
    gemm<false, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem, vecC);
}
}  // namespace sk16

// Orientation as rung 15 (BN x BM tiles when gridDim.x is not the BM x BN count); slices along gridDim.z. An
// unsplit launch runs rung 15's block function itself (il15::blockTile, at rung 16's parameters), not sk16::gemm: the
// slice bookkeeping of sk16::gemm changed ptxas's register allocation and instruction order in the main loop.
template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY, unsigned THREADS,
          unsigned STAGES, unsigned GROUP_M, unsigned MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_split_k_small_problems(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  extern __shared__ __align__(16) float smem[];  // STAGES * BK * (BM + BN + 4) floats, either orientation
  constexpr unsigned WTX = 32 / WTY;
  constexpr bool CAN_SWAP = BM != BN && BN % 32 == 0 && BN % (MI * 4 * WTY) == 0 && BM % (NI * 4 * WTX) == 0 &&
                            (BN * BK) % THREADS == 0 && (BK * BM / 4) % THREADS == 0;
  const bool tall = CAN_SWAP && gridDim.x != unsigned((M + BM - 1) / BM) * unsigned((N + BN - 1) / BN);
  // A build for one shape (the spec's `specialize`: -DSK16_SPLIT=0|1, whether its launch splits K) compiles that
  // half alone; without it, both, chosen here from gridDim.z.
#ifdef SK16_SPLIT
  constexpr bool UNSPLIT = !SK16_SPLIT, SPLIT = SK16_SPLIT;
#else
  constexpr bool UNSPLIT = true, SPLIT = true;
#endif
  if constexpr (UNSPLIT) if (!SPLIT || gridDim.z == 1) {
    if constexpr (CAN_SWAP) {
      if (tall) {
        il15::blockTile<BN, BM, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
        return;
      }
    }
    il15::blockTile<BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
    return;
  }
  if constexpr (SPLIT) {
    if (gridDim.x > sk16::SPLIT_FLAGS) __trap();  // more tiles than flags: refuse, never race
    if constexpr (CAN_SWAP) {
      if (tall) {
        sk16::blockTile<BN, BM, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
        return;
      }
    }
    sk16::blockTile<BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
  }
}
