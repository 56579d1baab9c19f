// Rung 14: multi-stage cp.async pipeline, 8 x 16 results per thread, any M, N, K >= 1.
//
// Steps over rung 13 (register prefetch, 2 shared stages, 8 x 8 per thread, 2 blocks per SM):
//  1. STAGES shared stages filled by cp.async (global -> shared without registers): STAGES - 1
//     tiles are in flight while one is computed, one __syncthreads per BK-deep tile, and no
//     prefetch registers (the register pressure that made ptxas sink rung 13's loads is gone).
//  2. Edges cost nothing in the loop: cp.async's src-size operand zero-fills what it does not
//     read, so the partial K tile (the first one, k0 = K - cdiv(K, BK) * BK <= 0) reads 0 bytes
//     before k = 0; rows of A past M and columns of B past N are clamped (they only feed C
//     entries that are never stored). After the first tile the loop has no predicates at all.
//  3. A is always copied with 4-byte cp.async straight into the transposed layout As[k][m]
//     (rows padded to BM + 4): lane l of a warp copies row l / 8, k = l % 8, so every warp
//     instruction reads 4 whole 32-byte sectors and writes 32 distinct banks (4k + m mod 32).
//     So A needs neither K % 4 == 0 nor an aligned pointer. B is copied with 16-byte cp.async
//     when N % 4 == 0 and B, C are 16-byte aligned, else with 4-byte cp.async (a warp copies 32
//     consecutive floats of a row): the odd shapes no longer take a slow register path.
//  4. Larger thread tiles: MI x NI sub-tiles of 4 x 4 (default 2 x 4 = 8 x 16 results), a warp is
//     WTY x (32 / WTY) threads (WTY = 4 or 8), so the fragments of a warp at one k are WTY and
//     32 / WTY contiguous float4: every LDS.128 is one conflict-free wavefront. 128 FFMA per
//     6 LDS.128 per k; at 256 threads and up to 255 registers, 1 block per SM (as cuBLAS).
//  5. Register double buffering across tiles: the fragments of k = 0 of tile t + 1 are read right
//     after the barrier that precedes the last k of tile t.
//  6. Grouped block order (GROUP_M tile-rows column by column) as in rung 13; the epilogue
//     writes float4 rows when N % 4 == 0 and C is aligned, else scalars; C is never read when
//     beta == 0.

namespace ms14 {

__device__ __forceinline__ unsigned smemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Copy `bytes` (0 or the full size) of a 4- or 16-byte chunk; the rest of the chunk is zero-filled.
__device__ __forceinline__ void cp4(unsigned dst, const float* src, unsigned bytes) {
#if L2HINT
  asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void cp16(unsigned dst, const float* src, unsigned bytes) {
#if L2HINT
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void waitGroups() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

#if STRIDED
// One base pointer and one stride per operand (no pointer per copy): rows past M and columns past N are
// zero-filled or clamped; the predicates are needed only in edge blocks (a uniform branch).
template <bool VEC, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS>
struct Loader {
  static constexpr unsigned LDA = BM + 4;
  static constexpr unsigned A_CP = BM * BK / THREADS, A_RP = THREADS / BK;   // copies, rows per pass
  static constexpr unsigned B_W = VEC ? 4 : 1;
  static constexpr unsigned B_ROW = BN / B_W;                                 // copies per row of Bs
  static constexpr unsigned B_CP = BK * BN / B_W / THREADS;
  static constexpr unsigned B_COLS = B_ROW > THREADS ? B_ROW / THREADS : 1;  // column slots per thread
  static constexpr unsigned B_RP = B_ROW > THREADS ? 1 : THREADS / B_ROW;    // rows per pass
  static constexpr unsigned B_PASSES = B_CP / B_COLS;
  const float* pa;
  const float* pb[B_COLS];
  long long aStride, bStride, bStep;
  int ka, kb, aRows;  // k of this thread's copies in the first tile; rows of A left in this block
  const float *A0, *B0;

  __device__ __forceinline__ Loader(const float* A, const float* B, int M, int N, int K, int m0, int n0,
                                    int k0, unsigned tid) : A0(A), B0(B) {
    ka = k0 + int(tid % BK);
    aRows = M - m0 - int(tid / BK);  // copy i is inside A when i * A_RP < aRows
    pa = A + (long long)min(m0 + int(tid / BK), M - 1) * K + ka;
    aStride = (long long)A_RP * K;
    kb = k0 + int(tid / B_ROW % BK);
#pragma unroll
    for (unsigned c = 0; c < B_COLS; ++c) {
      const int n = min(n0 + int((tid + c * THREADS) % B_ROW) * int(B_W), N - int(B_W));
      pb[c] = B + (long long)kb * N + n;
    }
    bStride = (long long)B_RP * N;
    bStep = (long long)BK * N;
  }

  template <bool FIRST>
  __device__ __forceinline__ void issue(unsigned as, unsigned tid) {
    const unsigned aDst = as + ((tid % BK) * LDA + tid / BK) * 4;
    const bool kOk = !FIRST || ka >= 0;
    const float* q = pa;
    if (aRows >= int(A_CP * A_RP)) {
#pragma unroll
      for (unsigned i = 0; i < A_CP; ++i, q += aStride) cp4(aDst + i * A_RP * 4, kOk ? q : A0, kOk ? 4u : 0u);
    } else {
#pragma unroll
      for (unsigned i = 0; i < A_CP; ++i, q += aStride) {
        const bool ok = kOk && int(i * A_RP) < aRows;
        cp4(aDst + i * A_RP * 4, ok ? q : A0, ok ? 4u : 0u);
      }
    }
    pa += BK;
    const unsigned bs = as + BK * LDA * 4;
#pragma unroll
    for (unsigned c = 0; c < B_COLS; ++c) {
      const unsigned e0 = tid + c * THREADS;
      const unsigned dst = bs + ((e0 / B_ROW) * BN + (e0 % B_ROW) * B_W) * 4;
      const float* p = pb[c];
#pragma unroll
      for (unsigned r = 0; r < B_PASSES; ++r, p += bStride) {
        const bool ok = !FIRST || kb + int(r * B_RP) >= 0;
        if (VEC)
          cp16(dst + r * B_RP * BN * 4, ok ? p : B0, ok ? 16u : 0u);
        else
          cp4(dst + r * B_RP * BN * 4, ok ? p : B0, ok ? 4u : 0u);
      }
      pb[c] += bStep;
    }
  }
};
#else
template <bool VEC, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS>
struct Loader {
  static constexpr unsigned LDA = BM + 4;
  static constexpr unsigned A_CP = BM * BK / THREADS;                     // 4-byte copies of A
  static constexpr unsigned B_W = VEC ? 4 : 1;                            // floats per copy of B
  static constexpr unsigned B_CP = BK * BN / B_W / THREADS;               // copies of B
  static constexpr unsigned B_ROW = BN / B_W;                             // copies per row of Bs
  const float* pa[A_CP];
  const float* pb[B_CP];
  int ka, kb[B_CP];  // k of this thread's copies in the first tile (negative: before the matrix)
  const float *A0, *B0;
  long long bStep;
#if IMMB
  const float* pw;  // this warp's row, this lane's first column
  int kw, nLeft;
  bool fullN;
#endif

  __device__ __forceinline__ Loader(const float* A, const float* B, int M, int N, int K, int m0, int n0,
                                    int k0, unsigned tid) : A0(A), B0(B), bStep((long long)BK * N) {
    ka = k0 + int(tid % BK);
#pragma unroll
    for (unsigned i = 0; i < A_CP; ++i) {
      const int m = min(m0 + int(tid / BK + i * (THREADS / BK)), M - 1);
      pa[i] = A + (long long)m * K + ka;
    }
#if IMMB
    kw = k0 + int(tid / 32);
    pw = B + (long long)kw * N + n0 + tid % 32;
    nLeft = N - n0;
    fullN = nLeft >= int(BN);
    if (!VEC && THREADS == 32 * BK) return;
#endif
#pragma unroll
    for (unsigned i = 0; i < B_CP; ++i) {
      const unsigned e = i * THREADS + tid;
      kb[i] = k0 + int(e / B_ROW);
      const int n = min(n0 + int(e % B_ROW) * int(B_W), N - int(B_W));  // N >= 4 when VEC
      pb[i] = B + (long long)kb[i] * N + n;
    }
  }

  // Issue the copies of the next tile into the stage at shared address `as` (As, then Bs).
  template <bool FIRST>
  __device__ __forceinline__ void issue(unsigned as, unsigned tid) {
    const unsigned aDst = as + ((tid % BK) * LDA + tid / BK) * 4;
#pragma unroll
    for (unsigned i = 0; i < A_CP; ++i) {
      const bool ok = !FIRST || ka >= 0;
      cp4(aDst + i * (THREADS / BK) * 4, ok ? pa[i] : A0, ok ? 4u : 0u);
      pa[i] += BK;
    }
    const unsigned bs = as + BK * LDA * 4;
#if IMMB
    if (!VEC && THREADS == 32 * BK) {
      const unsigned dst = bs + ((tid / 32) * BN + tid % 32) * 4;
      const bool ok0 = !FIRST || kw >= 0;
      if (fullN) {
#pragma unroll
        for (unsigned j = 0; j < BN / 32; ++j) cp4(dst + 128 * j, ok0 ? pw + 32 * j : B0, ok0 ? 4u : 0u);
      } else {
#pragma unroll
        for (unsigned j = 0; j < BN / 32; ++j) {
          const bool ok = ok0 && int(tid % 32 + 32 * j) < nLeft;
          cp4(dst + 128 * j, ok ? pw + 32 * j : B0, ok ? 4u : 0u);
        }
      }
      pw += bStep;
      return;
    }
#endif
#pragma unroll
    for (unsigned i = 0; i < B_CP; ++i) {
      const unsigned e = i * THREADS + tid;
      const unsigned dst = bs + ((e / B_ROW) * BN + (e % B_ROW) * B_W) * 4;
      const bool ok = !FIRST || kb[i] >= 0;
      if (VEC)
        cp16(dst, ok ? pb[i] : B0, ok ? 16u : 0u);
      else
        cp4(dst, ok ? pb[i] : B0, ok ? 4u : 0u);
      pb[i] += bStep;
    }
  }
};

#endif

template <bool VEC, unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY,
          unsigned THREADS, unsigned STAGES, unsigned GROUP_M>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C,
                                     float* smem) {
  constexpr unsigned WTX = 32 / WTY;
  constexpr unsigned LDA = BM + 4;
  constexpr unsigned WARPS_N = BN / (NI * 4 * WTX);
  constexpr unsigned A_STAGE = BK * LDA, STAGE = BK * LDA + BK * BN;

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
  Loader<VEC, BM, BN, BK, THREADS> ld(A, B, M, N, K, m0, n0, K - numTiles * int(BK), tid);
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

#if NODB
  unsigned stage = 0;
  for (int t = 0; t < numTiles; ++t) {
    const unsigned next = stage + 1 == STAGES ? 0 : stage + 1;
    const float* as = smem + stage * STAGE;
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      float4 a4[MI], b4[NI];
#pragma unroll
      for (unsigned s = 0; s < MI; ++s) a4[s] = *reinterpret_cast<const float4*>(&as[kk * LDA + rowBase + s * 4 * WTY]);
#pragma unroll
      for (unsigned s = 0; s < NI; ++s)
        b4[s] = *reinterpret_cast<const float4*>(&as[A_STAGE + kk * BN + colBase + s * 4 * WTX]);
      if (kk == BK - 1 && t + 1 < numTiles) {
        waitGroups<STAGES - 2>();
        __syncthreads();
        if (t + int(STAGES) < numTiles) ld.template issue<false>(sBase + stage * STAGE * 4, tid);
        commit();
      }
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
#else
  float4 fa[2][MI], fb[2][NI];
#pragma unroll
  for (unsigned s = 0; s < MI; ++s) fa[0][s] = *reinterpret_cast<const float4*>(&smem[rowBase + s * 4 * WTY]);
#pragma unroll
  for (unsigned s = 0; s < NI; ++s)
    fb[0][s] = *reinterpret_cast<const float4*>(&smem[A_STAGE + colBase + s * 4 * WTX]);

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
          fb[(kk + 1) & 1][s] =
              *reinterpret_cast<const float4*>(&as[A_STAGE + (kk + 1) * BN + colBase + s * 4 * WTX]);
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
          fb[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&ns[A_STAGE + colBase + s * 4 * WTX]);
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
#endif
  waitGroups<0>();  // no copy may still be writing shared memory when the block exits

#if SMEMEPI
  // Epilogue. C rows 16-byte aligned (N % 4 == 0, C aligned): float4 stores straight from registers.
  // Otherwise the tile goes through shared memory, one sub-row i at a time (BM / (MI * 4) rows of BN),
  // and consecutive lanes store consecutive floats of a row: whole sectors, whatever the alignment.
  const bool vc = (N % 4 == 0) && reinterpret_cast<size_t>(C) % 16 == 0;
  if (vc) {
#pragma unroll
    for (unsigned i = 0; i < MI * 4; ++i) {
      const int m = m0 + int(rowBase + (i / 4) * 4 * WTY + i % 4);
      if (m >= M) continue;
      float* cRow = C + (long long)m * N;
#pragma unroll
      for (unsigned s = 0; s < NI; ++s) {
        const int n = n0 + int(colBase + s * 4 * WTX);
        if (n >= N) continue;
        float4 v = make_float4(alpha * acc[i][s * 4], alpha * acc[i][s * 4 + 1], alpha * acc[i][s * 4 + 2],
                               alpha * acc[i][s * 4 + 3]);
        float4* c = reinterpret_cast<float4*>(cRow + n);
        if (beta != 0.f) {
          const float4 old = *c;
          v.x += beta * old.x; v.y += beta * old.y; v.z += beta * old.z; v.w += beta * old.w;
        }
        *c = v;
      }
    }
  } else {
    constexpr unsigned SLOTS = BM / (MI * 4), LDC = BN + 4;  // rows staged per sub-row i
    static_assert(SLOTS * LDC <= STAGES * STAGE, "a staged slab must fit in the stages");
    const unsigned slot = (warp / WARPS_N) * WTY + ty;     // this thread's row among the SLOTS
    __syncthreads();  // every warp is done with the stages
#pragma unroll
    for (unsigned i = 0; i < MI * 4; ++i) {
#pragma unroll
      for (unsigned s = 0; s < NI; ++s)
        *reinterpret_cast<float4*>(&smem[slot * LDC + colBase + s * 4 * WTX]) =
            make_float4(acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]);
      __syncthreads();
#pragma unroll
      for (unsigned e = tid; e < SLOTS * BN; e += THREADS) {
        const unsigned r = e / BN, c = e % BN;
        const int m = m0 + int((r / WTY) * (MI * 4 * WTY) + (r % WTY) * 4 + (i / 4) * 4 * WTY + i % 4);
        const int n = n0 + int(c);
        if (m < M && n < N) {
          float* p = C + (long long)m * N + n;
          float v = alpha * smem[r * LDC + c];
          if (beta != 0.f) v += beta * *p;
          *p = v;
        }
      }
      __syncthreads();
    }
  }
}
#else
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
      if (VEC) {
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

#endif
}  // namespace ms14

template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY, unsigned THREADS,
          unsigned STAGES, unsigned GROUP_M, unsigned MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_multistage_any_shape(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  static_assert(BK == 8, "a warp's 4-byte copies of A cover 4 rows x 8 k: conflict-free with LDA = BM + 4");
  static_assert(BM % 32 == 0, "LDA = BM + 4 must be 4 mod 32");
  static_assert(WTY == 4 || WTY == 8, "fragments of a warp: WTY and 32 / WTY float4, at most 8 each");
  static_assert(BM % (MI * 4 * WTY) == 0 && BN % (NI * 4 * (32 / WTY)) == 0, "warp tiles must tile the block");
  static_assert((BM / (MI * 4 * WTY)) * (BN / (NI * 4 * (32 / WTY))) * 32 == THREADS, "one warp tile per warp");
  static_assert((BM * BK) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole copies per thread");
  static_assert(STAGES >= 2, "at least two stages");
  // One shared array for both paths (each inlined path would otherwise get its own).
  __shared__ __align__(16) float smem[STAGES * (BK * (BM + 4) + BK * BN)];
  const bool vec = (N % 4 == 0) &&
                   ((reinterpret_cast<size_t>(B) | reinterpret_cast<size_t>(C)) % 16 == 0);
  if (vec)
    ms14::gemm<true, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
  else
    ms14::gemm<false, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
}
