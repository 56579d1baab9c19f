// Rung 14: multi-stage cp.async pipeline, 8 x 16 results per thread, any M, N, K >= 1.
// Credit: the multi-stage cp.async pipeline of NVIDIA CUTLASS's sm80 mainloop (MmaMultistage); our implementation.
//
// Steps over rung 13 (register prefetch, 2 shared stages, 8 x 8 per thread, 2 blocks per SM):
//  1. STAGES shared stages filled by cp.async (global -> shared without registers): STAGES - 1
//     tiles are in flight while one is computed, one __syncthreads per BK-deep tile, and no
//     prefetch registers (the register pressure that made ptxas sink rung 13's loads is gone).
//  2. Edges cost nothing in the loop: cp.async's src-size operand zero-fills what it does not
//     read, so the partial K tile (the first one, k0 = K - cdiv(K, BK) * BK <= 0) reads 0 bytes
//     before k = 0; rows of A past M are clamped, columns of B past N are clamped (aligned rows)
//     or read from the next row (chunked rows): they only feed C entries that are never stored.
//     A chunk that runs past B's last element reads only the bytes up to it.
//  3. A is always copied with 4-byte cp.async straight into the transposed layout As[k][m]
//     (rows padded to BM + 4): lane l of a warp copies row l / 8, k = l % 8, so every warp
//     instruction reads 4 whole 32-byte sectors and writes 32 distinct banks (4k + m mod 32).
//     So A needs neither K % 4 == 0 nor an aligned pointer. B is always copied with 16-byte
//     cp.async: exactly the tile when N % 4 == 0 and B is aligned; otherwise each row as the
//     aligned 16-byte chunks that cover it (one chunk more, rows of Bs padded to BN + 4), and the
//     fragment reads add the row's shift r (0-3 floats), a constant of the unrolled loop: one
//     LDS.128 when r == 0, else 8- and 4-byte reads. Rows of a tile go to shared rows rotated so
//     that only 7 shift patterns exist (one compiled path each, chosen once per launch). The first
//     chunk of B's first row may start up to 3 floats before B: inside the same aligned 16 bytes,
//     so inside B's allocation (CUDA allocations are 256-byte aligned); those floats are never used.
//  4. Larger thread tiles: MI x NI sub-tiles of 4 x 4 (default 2 x 4 = 8 x 16 results), a warp is
//     WTY x (32 / WTY) threads (WTY = 4 or 8), so the fragments of a warp at one k are WTY and
//     32 / WTY contiguous float4: every LDS.128 is one conflict-free wavefront. 128 FFMA per
//     6 LDS.128 per k; at 256 threads and up to 255 registers, 1 block per SM (as cuBLAS).
//  5. Register double buffering across tiles: the fragments of k = 0 of tile t + 1 are read right
//     after the barrier that precedes the last k of tile t.
//  6. Grouped block order (GROUP_M tile-rows column by column) as in rung 13; the epilogue
//     writes float4 rows when N % 4 == 0 and C is aligned, else scalars; C is never read when
//     beta == 0.
//  7. Wave quantization: the tile is BM x BN or BN x BM, whichever fills the last wave of blocks
//     better (the spec's grid decides with the SM count; see the kernel at the end).

namespace ms14 {

__device__ __forceinline__ unsigned smemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Copy the first `bytes` of a 4- or 16-byte chunk; the rest of the chunk is zero-filled.
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

// Row shifts of B in shared memory: PAT holds 2 bits per row of a tile (rows j and j + 4 share a shift).
// With 16-byte copies of aligned windows, element n of a Bs row whose first element sat r floats into its
// 16-byte chunk lands at n + r: the fragment reads below add r, known at compile time for every row.
__host__ __device__ constexpr unsigned pattern(unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  return r0 | r1 << 2 | r2 << 4 | r3 << 6;
}
__device__ __forceinline__ constexpr unsigned shiftOf(unsigned pat, unsigned row) { return (pat >> (2 * (row % 4))) & 3; }

// Four floats p[r .. r + 3] from a 16-byte aligned p: one LDS.128 when r == 0, else 8- and 4-byte reads. In the
// unrolled k loop r is a constant, so the branches fold away.
__device__ __forceinline__ float4 frag(const float* p, unsigned r) {
  if (r == 0) return *reinterpret_cast<const float4*>(p);
  if (r == 2) {
    const float2 lo = *reinterpret_cast<const float2*>(p + 2), hi = *reinterpret_cast<const float2*>(p + 4);
    return make_float4(lo.x, lo.y, hi.x, hi.y);
  }
  const float2 mid = *reinterpret_cast<const float2*>(p + r + 1);
  return make_float4(p[r], mid.x, mid.y, p[r + 3]);
}

// WIN == false: rows of B are 16-byte aligned (N % 4 == 0, B aligned): a row of Bs is BN floats, 16-byte copies.
// WIN == true: every row of the tile is copied as BN / 4 + 1 aligned 16-byte chunks starting at the chunk that
// holds its first element (rows of Bs are BN + 4 floats). A and B rows of a tile go to shared row
// (row - rot) % BK, so that the shifts repeat the same pattern in every block (see the kernel below).
template <bool WIN, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS>
struct Loader {
  static constexpr unsigned LDA = BM + 4;
  static constexpr unsigned LDB = WIN ? BN + 4 : BN;                     // floats per row of Bs
  static constexpr unsigned A_CP = BM * BK / THREADS;                     // 4-byte copies of A
  static constexpr unsigned B_ROW = WIN ? BN / 4 + 1 : BN / 4;            // 16-byte copies per row of Bs
  static constexpr unsigned B_ALL = BK * B_ROW;
  static constexpr unsigned B_CP = (B_ALL + THREADS - 1) / THREADS;      // copies of B per thread (last partial)
  const float* pa[A_CP];
  const float* pb[B_CP];
  unsigned aDst, bDst[B_CP];  // byte offsets in a stage
  int ka, kb[B_CP];           // k of this thread's copies in the first tile (negative: before the matrix)
  const float *A0, *B0, *bEnd;
  long long bStep;

  __device__ __forceinline__ Loader(const float* A, const float* B, int M, int N, int K, int m0, int n0,
                                    int k0, unsigned tid, unsigned rot)
      : A0(A), B0(reinterpret_cast<const float*>(reinterpret_cast<size_t>(B) & ~size_t(15))),
        bEnd(B + (long long)K * N), bStep((long long)BK * N) {
    ka = k0 + int(tid % BK);
    aDst = (((tid - rot) % BK) * LDA + tid / BK) * 4;
#pragma unroll
    for (unsigned i = 0; i < A_CP; ++i) {
      const int m = min(m0 + int(tid / BK + i * (THREADS / BK)), M - 1);
      pa[i] = A + (long long)m * K + ka;
    }
#pragma unroll
    for (unsigned i = 0; i < B_CP; ++i) {
      const unsigned e = i * THREADS + tid, row = e / B_ROW, q = e % B_ROW;
      kb[i] = k0 + int(row);
      bDst[i] = (((row - rot) % BK) * LDB + 4 * q) * 4;
      if (WIN) {  // the aligned chunk holding the row's element n0, then q chunks on
        const float* first = B + (long long)kb[i] * N + n0;
        pb[i] = reinterpret_cast<const float*>(reinterpret_cast<size_t>(first) & ~size_t(15)) + 4 * q;
      } else {
        pb[i] = B + (long long)kb[i] * N + min(n0 + int(4 * q), N - 4);  // columns past N clamped
      }
    }
  }

  // Issue the copies of the next tile into the stage at shared address `as` (As, then Bs).
  template <bool FIRST>
  __device__ __forceinline__ void issue(unsigned as, unsigned tid) {
#pragma unroll
    for (unsigned i = 0; i < A_CP; ++i) {
      const bool ok = !FIRST || ka >= 0;
      cp4(as + aDst + i * (THREADS / BK) * 4, ok ? pa[i] : A0, ok ? 4u : 0u);
      pa[i] += BK;
    }
    const unsigned bs = as + BK * LDA * 4;
#pragma unroll
    for (unsigned i = 0; i < B_CP; ++i) {
      if (B_ALL % THREADS == 0 || i + 1 < B_CP || tid < B_ALL % THREADS) {
        const bool ok = !FIRST || kb[i] >= 0;
        unsigned bytes = ok ? 16u : 0u;
        if (WIN) {  // a window may run past the end of B only in its last row: read what is there
          const long long left = bEnd - pb[i];
          bytes = left >= 4 ? bytes : left > 0 ? min(bytes, unsigned(left) * 4) : 0u;
        }
        cp16(bs + bDst[i], bytes ? pb[i] : B0, bytes);
      }
      pb[i] += bStep;
    }
  }
};

template <bool WIN, unsigned PAT, unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY,
          unsigned THREADS, unsigned STAGES, unsigned GROUP_M>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C,
                                     float* smem, unsigned rot, bool vecC) {
  constexpr unsigned WTX = 32 / WTY;
  constexpr unsigned LDA = BM + 4;
  constexpr unsigned WARPS_N = BN / (NI * 4 * WTX);
  constexpr unsigned LDB = Loader<WIN, BM, BN, BK, THREADS>::LDB;
  constexpr unsigned A_STAGE = BK * LDA, STAGE = BK * LDA + BK * LDB;

  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
  const int perGroup = GROUP_M * tilesN;
  const int bid = blockIdx.x;
  const int firstM = (bid / perGroup) * GROUP_M;
  const int groupRows = min(tilesM - firstM, int(GROUP_M));
  const int m0 = (firstM + (bid % perGroup) % groupRows) * BM;
  const int n0 = ((bid % perGroup) / groupRows) * BN;

  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned ty = lane / WTX, tx = lane % WTX;
  const unsigned rowBase = (warp / WARPS_N) * (MI * 4 * WTY) + ty * 4;  // + s * 4 * WTY
  const unsigned colBase = (warp % WARPS_N) * (NI * 4 * WTX) + tx * 4;  // + s * 4 * WTX

  const unsigned sBase = smemAddr(smem);

  float acc[MI * 4][NI * 4];
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i)
#pragma unroll
    for (unsigned j = 0; j < NI * 4; ++j) acc[i][j] = 0.f;

  const int numTiles = (K + BK - 1) / BK;
  Loader<WIN, BM, BN, BK, THREADS> ld(A, B, M, N, K, m0, n0, K - numTiles * int(BK), tid, rot);
#pragma unroll
  for (unsigned s = 0; s < STAGES; ++s) {
    if (int(s) < numTiles) {
      if (s == 0)
        ld.template issue<true>(sBase, tid);
      else
        ld.template issue<false>(sBase + s * STAGE * 4, tid);
    }
    commit();
  }
  waitGroups<STAGES - 1>();
  __syncthreads();

  float4 fa[2][MI], fb[2][NI];
#pragma unroll
  for (unsigned s = 0; s < MI; ++s) fa[0][s] = *reinterpret_cast<const float4*>(&smem[rowBase + s * 4 * WTY]);
#pragma unroll
  for (unsigned s = 0; s < NI; ++s)
    fb[0][s] = frag(&smem[A_STAGE + colBase + s * 4 * WTX], shiftOf(PAT, 0));

  unsigned stage = 0;
  for (int t = 0; t < numTiles; ++t) {
    const unsigned next = stage + 1 == STAGES ? 0 : stage + 1;
    const float* as = smem + stage * STAGE;
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      if (kk < BK - 1) {
#pragma unroll
        for (unsigned s = 0; s < MI; ++s)
          fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&as[(kk + 1) * LDA + rowBase + s * 4 * WTY]);
#pragma unroll
        for (unsigned s = 0; s < NI; ++s)
          fb[(kk + 1) & 1][s] = frag(&as[A_STAGE + (kk + 1) * LDB + colBase + s * 4 * WTX], shiftOf(PAT, kk + 1));
      } else if (t + 1 < numTiles) {
        // Tile t + 1 has landed once at most STAGES - 2 groups are pending; after the barrier nobody
        // reads this stage any more (every thread holds its last fragments), so tile t + STAGES goes there.
        waitGroups<STAGES - 2>();
        __syncthreads();
        if (t + int(STAGES) < numTiles) ld.template issue<false>(sBase + stage * STAGE * 4, tid);
        commit();
        const float* ns = smem + next * STAGE;
#pragma unroll
        for (unsigned s = 0; s < MI; ++s)
          fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&ns[rowBase + s * 4 * WTY]);
#pragma unroll
        for (unsigned s = 0; s < NI; ++s)
          fb[(kk + 1) & 1][s] = frag(&ns[A_STAGE + colBase + s * 4 * WTX], shiftOf(PAT, 0));
      }
      const float4* a4 = fa[kk & 1];
      const float4* b4 = fb[kk & 1];
#pragma unroll
      for (unsigned i = 0; i < MI * 4; ++i) {
        const float4 av = a4[i / 4];
        const float a = (i % 4 == 0) ? av.x : (i % 4 == 1) ? av.y : (i % 4 == 2) ? av.z : av.w;
#pragma unroll
        for (unsigned s = 0; s < NI; ++s) {
          acc[i][s * 4 + 0] += a * b4[s].x;
          acc[i][s * 4 + 1] += a * b4[s].y;
          acc[i][s * 4 + 2] += a * b4[s].z;
          acc[i][s * 4 + 3] += a * b4[s].w;
        }
      }
    }
    stage = next;
  }
  waitGroups<0>();  // no copy may still be writing shared memory when the block exits

  // Epilogue: C = alpha * acc + beta * C, C never read when beta == 0.
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i) {
    const int m = m0 + int(rowBase + (i / 4) * 4 * WTY + i % 4);
    if (m >= M) continue;
    float* cRow = C + (long long)m * N;
#pragma unroll
    for (unsigned s = 0; s < NI; ++s) {
      const int n = n0 + int(colBase + s * 4 * WTX);
      float v[4];
#pragma unroll
      for (unsigned j = 0; j < 4; ++j) v[j] = alpha * acc[i][s * 4 + j];
      if (vecC) {
        if (n < N) {
          float4* c = reinterpret_cast<float4*>(cRow + n);
          if (beta != 0.f) {
            const float4 old = *c;
            v[0] += beta * old.x; v[1] += beta * old.y; v[2] += beta * old.z; v[3] += beta * old.w;
          }
          *c = make_float4(v[0], v[1], v[2], v[3]);
        }
      } else {
#pragma unroll
        for (unsigned j = 0; j < 4; ++j) {
          if (n + int(j) < N) {
            float* c = cRow + n + j;
            if (beta != 0.f) v[j] += beta * *c;
            *c = v[j];
          }
        }
      }
    }
  }
}

// One block's tile of C, BM x BN, on every path (the kernel below picks the orientation).
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
  static_assert(STAGES >= 2, "at least two stages");
  const bool vecC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
  // Row kk of every tile starts r = (R0 + kk * L) % 4 floats into its 16-byte chunk (BN % 4 == 0, so n0 adds
  // nothing; 8 rows of B are 8 * N floats, a multiple of 4, so the pattern repeats in every tile).
  // N % 4 is a property of the shape: a build for one shape (the spec's `specialize`: -DMS14_NMOD4) makes L a
  // constant, so the paths of the other classes fold away and are never compiled; without it, all 8 paths are.
#ifdef MS14_NMOD4
  constexpr unsigned L = MS14_NMOD4;
  static_assert(L < 4, "MS14_NMOD4 is N % 4");
#else
  const unsigned L = unsigned(N) % 4;
#endif
  const unsigned k0 = unsigned(K - (K + int(BK) - 1) / int(BK) * int(BK));
  const unsigned R0 = unsigned(reinterpret_cast<size_t>(B) / 4 + k0 * unsigned(N)) % 4;
#define MS14_GEMM(WIN, PAT, ROT)                                                                  \
  ms14::gemm<WIN, PAT, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, \
                                                                          smem, ROT, vecC)
  using ms14::pattern;
  if (L == 0 && R0 == 0) {
    MS14_GEMM(false, 0, 0);  // aligned rows: 16-byte copies of exactly the tile
  } else if (L == 0) {       // every row shifted alike
    if (R0 == 1) MS14_GEMM(true, pattern(1, 1, 1, 1), 0);
    else if (R0 == 2) MS14_GEMM(true, pattern(2, 2, 2, 2), 0);
    else MS14_GEMM(true, pattern(3, 3, 3, 3), 0);
  } else if (L == 2) {  // shifts alternate R0, R0 + 2: rotate by one row to start at the smaller
    if (R0 % 2 == 0) MS14_GEMM(true, pattern(0, 2, 0, 2), R0 / 2);
    else MS14_GEMM(true, pattern(1, 3, 1, 3), R0 / 2);
  } else {  // L odd: the shifts take every value; rotate rows so that shared row 0 has shift 0
    const unsigned rot = (4 - R0) * L % 4;
    if (L == 1) MS14_GEMM(true, pattern(0, 1, 2, 3), rot);
    else MS14_GEMM(true, pattern(0, 3, 2, 1), rot);
  }
#undef MS14_GEMM
}
}  // namespace ms14

// Orientation (wave quantization): the block tile is BM x BN, or BN x BM when that fills the last wave better
// (at 4095 x 4097, 128 x 256 tiles make 544 blocks, 4.12 waves of 132; 256 x 128 tiles make 528, 4 waves). The
// spec's grid makes the choice, since it knows the SM count, and launches exactly that orientation's tiles; the
// kernel reads it back from gridDim.x (when both counts are equal, BM x BN).
template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY, unsigned THREADS,
          unsigned STAGES, unsigned GROUP_M, unsigned MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_multistage_any_shape(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  // One shared array for every path and both orientations (each inlined path would otherwise get its own).
  __shared__ __align__(16) float smem[STAGES * BK * (BM + BN + 8)];
  constexpr unsigned WTX = 32 / WTY;
  constexpr bool CAN_SWAP = BM != BN && BN % 32 == 0 && BN % (MI * 4 * WTY) == 0 && BM % (NI * 4 * WTX) == 0 &&
                            (BN * BK) % THREADS == 0 && (BK * BM / 4) % THREADS == 0;
  // A build for one shape (the spec's `specialize`: -DMS14_TALL=0|1, the grid's choice at that shape) compiles
  // that orientation alone; without it, both, chosen here from gridDim.x.
#ifdef MS14_TALL
  constexpr bool WIDE = !MS14_TALL, TALL = MS14_TALL;
  static_assert(CAN_SWAP || !TALL, "MS14_TALL=1: these parameters have no BN x BM tiles");
#else
  constexpr bool WIDE = true, TALL = true;
#endif
  if constexpr (CAN_SWAP && TALL) {
    if (!WIDE || gridDim.x != unsigned((M + BM - 1) / BM) * unsigned((N + BN - 1) / BN)) {
      ms14::blockTile<BN, BM, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
      return;
    }
  }
  if constexpr (WIDE) ms14::blockTile<BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
}
