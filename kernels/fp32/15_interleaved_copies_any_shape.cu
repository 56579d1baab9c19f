// Rung 15: copies interleaved with the math, any M, N, K >= 1.
// Credit: copies spread over the k-steps as NVIDIA CUTLASS's multistage mainloop orders them; our implementation.
//
// Steps over rung 14 (cp.async multi-stage pipeline, 8 x 16 results per thread, tile orientation by waves):
//  1. Copy addresses are a tile pointer per operand, the same for the whole block, plus per-thread 32-bit byte
//     offsets fixed for the whole loop (two ALU adds per copy). Rung 14 carried a 64-bit pointer per copy and
//     advanced each after its copy; ptxas then made those updates wait (long scoreboard) until the copy had read
//     the register, and kept the kernel at 255 registers. Here: about 215, and no pointer update after a copy.
//  2. The copies of a tile are spread over the k-steps of the tile computed meanwhile, as CUTLASS's multistage
//     main loop does: k-step kk (0 .. BK - 2) issues copies kk * PER_STEP .. (kk + 1) * PER_STEP - 1, between
//     its fragment reads and its 128 FFMAs, so that no k-step carries more than two or three copies.
//  3. One barrier per tile, after k-step BK - 2: by then every thread has read its fragments of the tile's last
//     k, so the stage read during tile t - 1 is free, and tile t + STAGES - 1 is copied into it during tile t.
//     A thread waits only for tile t + 1 (cp.async.wait_group STAGES - 2).
//  4. B moves in 16-byte copies when its rows are 16-byte aligned (N % 4 == 0, B aligned), else in 4-byte
//     copies, a warp copying 32 consecutive floats of one row, as cuBLAS's align1 kernel does: every shared
//     fragment read stays one LDS.128 on both paths. A always moves in 4-byte copies straight into the
//     transposed layout As[k][m] (rows padded to BM + 4 floats). Edges as rung 14: the partial K tile is the
//     first one (zero-filled before k = 0), rows of A past M and columns of B past N are clamped.
//  5. The epilogue stores from the accumulators through one row pointer at compile-time offsets (float4 when C
//     allows), and otherwise through shared memory, so that each warp store writes 32 consecutive floats of a
//     row instead of eight rows of 4-byte pieces (at 4095 x 4097 the 4-byte stores waited on one another).
//  6. The block order walks GROUP_M tile-rows column by column (rung 13); the default 64 is the H100 sweep's
//     best: at 4095 x 4097 x 1023, 8 tile-rows left some SMs 10% busier than the mean.
//
// Limits: byte offsets within a tile are 32-bit, so max(BM, BN) * K and BK * N stay below 2^30 (the spec checks).

namespace il15 {

__device__ __forceinline__ unsigned smemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Copy the first `bytes` of a 4- or 16-byte chunk to shared memory; the rest is zero-filled.
__device__ __forceinline__ void cp4(unsigned dst, const float* src, unsigned bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp16(unsigned dst, const float* src, unsigned bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void waitGroups() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}
// What one thread copies of every tile: A_CP 4-byte copies of A (row tid / BK + i * THREADS / BK, k = tid % BK,
// into As[k][row]) and B_CP copies of B (16-byte when VECB, else 4-byte; element e = i * THREADS + tid of the
// tile in copy units, row-major). Offsets are bytes from the tile's first element, destinations bytes from the
// stage's start.
template <bool VECB, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS>
struct Copies {
  static constexpr unsigned LDA = BM + 4;
  static constexpr unsigned UNIT = VECB ? 4 : 1;                  // floats per copy of B
  static constexpr unsigned A_CP = BM * BK / THREADS;
  static constexpr unsigned B_CP = BK * BN / UNIT / THREADS;
  static constexpr unsigned ALL = A_CP + B_CP;
  static constexpr unsigned STEPS = BK - 1;  // k-steps that issue copies: not the last (the stages turn before it)
  static constexpr unsigned PER_STEP = (ALL + STEPS - 1) / STEPS;
  static constexpr unsigned A_ROWS = THREADS / BK;               // rows of A one pass of the block copies
  static_assert(THREADS % BK == 0 && (BK * BN) % (UNIT * THREADS) == 0, "whole copies per thread");
  static constexpr unsigned B_ROW_UNITS = BN / UNIT;
  unsigned offA[A_CP], offB[B_CP];  // bytes: a 64-bit add of a 32-bit offset is two ALU adds (IMAD.WIDE: the FMA pipe)
  unsigned dstA, dstB;  // bytes: copy i of A goes to dstA + i * A_ROWS * 4, of B to dstB + i * THREADS * UNIT * 4
  int kA;               // k of this thread's copies of A within a tile (the first tile starts at k0 <= 0)

  __device__ __forceinline__ Copies(int M, int N, int K, int m0, int n0, unsigned tid) {
    kA = int(tid % BK);
    dstA = ((tid % BK) * LDA + tid / BK) * 4;
#pragma unroll
    for (unsigned i = 0; i < A_CP; ++i) {
      const int m = min(m0 + int(tid / BK + i * A_ROWS), M - 1);  // rows past M clamped (never stored)
      offA[i] = unsigned((m - m0) * K + kA) * 4;
    }
    dstB = BK * LDA * 4 + tid * UNIT * 4;  // the tile is row-major in copy units, so is the stage's Bs
#pragma unroll
    for (unsigned i = 0; i < B_CP; ++i) {
      const unsigned e = i * THREADS + tid, row = e / B_ROW_UNITS, col = (e % B_ROW_UNITS) * UNIT;
      // columns past N clamped to the last whole copy unit of the row (they feed only C never stored)
      offB[i] = unsigned(int(row) * N + min(int(col), N - int(UNIT) - n0)) * 4;
    }
  }

  // Copy number c (0 <= c < ALL) of the tile at aT / bT into the stage at shared address `stage`; FIRST: the
  // first tile, starting at k = kTile <= 0: its rows k < 0 are zero-filled without reading.
  template <bool FIRST>
  __device__ __forceinline__ void copy(unsigned c, unsigned stage, const char* aT, const char* bT, int kTile,
                                       const float* A, const float* B) {
    if (c < A_CP) {
      const bool ok = !FIRST || kTile + kA >= 0;
      cp4(stage + dstA + c * A_ROWS * 4, ok ? reinterpret_cast<const float*>(aT + offA[c]) : A, ok ? 4u : 0u);
    } else {
      const unsigned i = c - A_CP;
      const bool ok = !FIRST || kTile + int((i * THREADS + threadIdx.x) / B_ROW_UNITS) >= 0;
      const unsigned dst = stage + dstB + i * THREADS * UNIT * 4;
      if (VECB)
        cp16(dst, ok ? reinterpret_cast<const float*>(bT + offB[i]) : B, ok ? 16u : 0u);
      else
        cp4(dst, ok ? reinterpret_cast<const float*>(bT + offB[i]) : B, ok ? 4u : 0u);
    }
  }
};

// The epilogue when C is in float4 rows: C = alpha * acc + beta * C for one thread's MI x NI sub-tiles of 4 x 4
// (rows mBase + 4 * WTY * (i / 4) + i % 4, columns nBase + 4 * WTX * (j / 4) + j % 4); C is never read when
// beta == 0. Results are scaled in place and each row is stored through one row pointer at compile-time offsets, so
// no address is recomputed per store. Rows past M are skipped; CHECK_N: columns past N too (the last tile column).
template <bool CHECK_N, unsigned MI, unsigned NI, unsigned WTY>
__device__ __forceinline__ void storeTile(float (&acc)[MI * 4][NI * 4], float* __restrict__ C, int M, int N, int mBase,
                                          int nBase, float alpha, float beta) {
  constexpr unsigned WTX = 32 / WTY;
  const int nLeft = N - nBase;
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i) {
    const int m = mBase + int((i / 4) * 4 * WTY + i % 4);
    if (m >= M) continue;
    float* cRow = C + (long long)m * N + nBase;
#pragma unroll
    for (unsigned j = 0; j < NI * 4; ++j) acc[i][j] *= alpha;
#pragma unroll
    for (unsigned s = 0; s < NI; ++s) {
      float4* c = reinterpret_cast<float4*>(cRow + s * 4 * WTX);
      if (CHECK_N && int(s * 4 * WTX) >= nLeft) continue;
      if (beta != 0.f) {
        const float4 old = *c;
        acc[i][s * 4] += beta * old.x; acc[i][s * 4 + 1] += beta * old.y;
        acc[i][s * 4 + 2] += beta * old.z; acc[i][s * 4 + 3] += beta * old.w;
      }
      *c = make_float4(acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]);
    }
  }
}

// The epilogue for C that is not in float4 rows (N % 4 != 0 or C misaligned): one warp's results (rows m0w +
// 4 * WTY * (i / 4) + 4 * ty + i % 4, columns n0w + 4 * WTX * (j / 4) + 4 * tx + j % 4) go through the warp's own
// region of shared memory, WTY rows of the warp tile's width at a time (row i of every lane), and leave it as rows of
// 32 consecutive floats: one 128-byte store per warp instead of eight rows of 4-byte pieces. Rows are padded so that
// the lanes' 16-byte writes are conflict-free (with WTX = 4, a quarter-warp writes two rows: 16 banks apart).
template <unsigned MI, unsigned NI, unsigned WTY>
__device__ __forceinline__ void stageTile(float (&acc)[MI * 4][NI * 4], float* __restrict__ C, int M, int N, int m0w,
                                          int n0w, float alpha, float beta, float* region, unsigned lane) {
  constexpr unsigned WTX = 32 / WTY, WIDTH = NI * 4 * WTX, PITCH = WIDTH + (WTX == 4 ? 16 : 0);
  static_assert(WIDTH % 32 == 0, "rows of 32 floats");
  const unsigned ty = lane / WTX, tx = lane % WTX;
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i) {
#pragma unroll
    for (unsigned s = 0; s < NI; ++s)
      *reinterpret_cast<float4*>(&region[ty * PITCH + s * 4 * WTX + tx * 4]) = make_float4(
          alpha * acc[i][s * 4], alpha * acc[i][s * 4 + 1], alpha * acc[i][s * 4 + 2], alpha * acc[i][s * 4 + 3]);
    __syncwarp();
#pragma unroll
    for (unsigned r = 0; r < WTY; ++r) {
      const int m = m0w + int((i / 4) * 4 * WTY + r * 4 + i % 4);
#pragma unroll
      for (unsigned h = 0; h < WIDTH / 32; ++h) {
        const int n = n0w + int(h * 32 + lane);
        if (m < M && n < N) {
          float* c = C + (long long)m * N + n;
          const float v = region[r * PITCH + h * 32 + lane];
          *c = beta != 0.f ? v + beta * *c : v;
        }
      }
    }
    __syncwarp();
  }
}

template <bool VECB, unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY,
          unsigned THREADS, unsigned STAGES, unsigned GROUP_M>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C,
                                     float* smem, bool vecC) {
  constexpr unsigned WTX = 32 / WTY;
  constexpr unsigned LDA = BM + 4;
  constexpr unsigned WARPS_N = BN / (NI * 4 * WTX);
  constexpr unsigned STAGE = BK * LDA + BK * BN;  // floats per stage: As[BK][BM + 4], Bs[BK][BN]
  using Cp = Copies<VECB, BM, BN, BK, THREADS>;

  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
  const int perGroup = GROUP_M * tilesN;
  const int bid = blockIdx.x;
  const int firstM = (bid / perGroup) * GROUP_M;
  const int groupRows = min(tilesM - firstM, int(GROUP_M));
  const int m0 = (firstM + (bid % perGroup) % groupRows) * BM;
  const int n0 = ((bid % perGroup) / groupRows) * BN;

  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned rowBase = (warp / WARPS_N) * (MI * 4 * WTY) + (lane / WTX) * 4;  // + s * 4 * WTY
  const unsigned colBase = (warp % WARPS_N) * (NI * 4 * WTX) + (lane % WTX) * 4;  // + s * 4 * WTX
  const unsigned sBase = smemAddr(smem);

  float acc[MI * 4][NI * 4];
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i)
#pragma unroll
    for (unsigned j = 0; j < NI * 4; ++j) acc[i][j] = 0.f;

  const int numTiles = (K + BK - 1) / BK;
  const int k0 = K - numTiles * int(BK);  // the first tile starts at k0 <= 0: its rows k < 0 are zero-filled
  Cp cp(M, N, K, m0, n0, tid);
  // The tile being copied: its first element in A and in B (tile 0 starts at k0).
  const char* aT = reinterpret_cast<const char*>(A + (long long)m0 * K + k0);
  const char* bT = reinterpret_cast<const char*>(B + (long long)k0 * N + n0);
  // Prologue: tiles 0 .. STAGES - 2, one commit group each.
#pragma unroll
  for (unsigned s = 0; s + 1 < STAGES; ++s) {
    if (int(s) < numTiles) {
#pragma unroll
      for (unsigned c = 0; c < Cp::ALL; ++c) {
        if (s == 0)
          cp.template copy<true>(c, sBase, aT, bT, k0, A, B);
        else
          cp.template copy<false>(c, sBase + s * STAGE * 4, aT, bT, 0, A, B);
      }
      aT += BK * 4;
      bT += (long long)BK * N * 4;
    }
    commit();
  }
  waitGroups<STAGES - 2>();
  __syncthreads();

  unsigned readOff = 0, writeOff = (STAGES - 1) * STAGE;  // floats from smem: the stage read, the stage written
  float4 fa[2][MI], fb[2][NI];
#pragma unroll
  for (unsigned s = 0; s < MI; ++s) fa[0][s] = *reinterpret_cast<const float4*>(&smem[rowBase + s * 4 * WTY]);
#pragma unroll
  for (unsigned s = 0; s < NI; ++s)
    fb[0][s] = *reinterpret_cast<const float4*>(&smem[BK * LDA + colBase + s * 4 * WTX]);

  for (int t = 0; t < numTiles; ++t) {
    const bool copying = t + int(STAGES) - 1 < numTiles;  // tile t + STAGES - 1 exists
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      // Fragments of the next k-step: k + 1 of this tile, or k = 0 of the next (its stage was made current at
      // the barrier after k-step BK - 2).
      const float* rs = smem + readOff;
      const unsigned kn = (kk + 1) % BK;
#pragma unroll
      for (unsigned s = 0; s < MI; ++s)
        fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&rs[kn * LDA + rowBase + s * 4 * WTY]);
#pragma unroll
      for (unsigned s = 0; s < NI; ++s)
        fb[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&rs[BK * LDA + kn * BN + colBase + s * 4 * WTX]);
      // Copy group kk of tile t + STAGES - 1 into the free stage.
      if (kk < Cp::STEPS && copying) {
#pragma unroll
        for (unsigned c = kk * Cp::PER_STEP; c < (kk + 1) * Cp::PER_STEP; ++c)
          if (c < Cp::ALL) cp.template copy<false>(c, sBase + writeOff * 4, aT, bT, 0, A, B);
      }
      // This k-step's outer product, rows in serpentine order (odd rows walk the columns backwards). ptxas
      // reorders the FFMAs, but not wholly: on the H100 this order ran 1-3% faster than row by row.
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
        // Tile t + STAGES - 1 is committed; wait for tile t + 1 (at most STAGES - 2 groups still pending). After
        // the barrier every thread holds or has read its fragments of this tile's last k, so the stage of tile t
        // is free for tile t + STAGES, and tile t + 1's stage becomes the one read.
        commit();
        waitGroups<STAGES - 2>();
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
  waitGroups<0>();  // no copy may still be writing shared memory when the block exits

  // Epilogue. C in float4 rows: straight from the accumulators (only blocks of the last column of tiles test each
  // column). Otherwise through shared memory, so that every store of a warp writes 32 consecutive floats of a row.
  if (vecC) {
    const int mBase = m0 + int(rowBase), nBase = n0 + int(colBase);
    if (n0 + int(BN) <= N)
      storeTile<false, MI, NI, WTY>(acc, C, M, N, mBase, nBase, alpha, beta);
    else
      storeTile<true, MI, NI, WTY>(acc, C, M, N, mBase, nBase, alpha, beta);
  } else {
    __syncthreads();  // every warp is done with the stages: each now stages its own results there
    stageTile<MI, NI, WTY>(acc, C, M, N, m0 + int(rowBase - (lane / WTX) * 4), n0 + int(colBase - (lane % WTX) * 4),
                           alpha, beta, smem + warp * (WTY * (NI * 4 * WTX + (WTX == 4 ? 16 : 0))), lane);
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
    il15::gemm<true, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem, vecC);
  else
    il15::gemm<false, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem, vecC);
}
}  // namespace il15

// Orientation (wave quantization), as rung 14: BM x BN tiles, or BN x BM when the spec's grid found that they fill
// the last wave better; the kernel reads the choice back from gridDim.x (equal counts: BM x BN).
template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY, unsigned THREADS,
          unsigned STAGES, unsigned GROUP_M, unsigned MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_interleaved_copies_any_shape(int M, int N, int K, float alpha, const float* __restrict__ A,
                                   const float* __restrict__ B, float beta, float* __restrict__ C) {
  extern __shared__ __align__(16) float smem[];  // STAGES * BK * (BM + BN + 4) floats, either orientation
  constexpr unsigned WTX = 32 / WTY;
  constexpr bool CAN_SWAP = BM != BN && BN % 32 == 0 && BN % (MI * 4 * WTY) == 0 && BM % (NI * 4 * WTX) == 0 &&
                            (BN * BK) % THREADS == 0 && (BK * BM / 4) % THREADS == 0;
  if constexpr (CAN_SWAP) {
    if (gridDim.x != unsigned((M + BM - 1) / BM) * unsigned((N + BN - 1) / BN)) {
      il15::blockTile<BN, BM, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
      return;
    }
  }
  il15::blockTile<BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
}
