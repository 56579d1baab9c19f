// Rung 15: 16-byte copies of aligned windows for both operands, any M, N, K >= 1.
//
// Rung 14 copies A with 4-byte cp.async (one float per thread per copy, straight into the transposed
// layout) and copies B with 4-byte cp.async whenever a row of B is not 16-byte aligned (N % 4 != 0 or
// a misaligned pointer); both cost time in the LSU, not in the memory system. Rung 15 copies every
// interior tile of both operands with 16-byte cp.async and moves the reshaping into shared memory:
//  1. A window, not an element: a row of a tile (8 k of A, BN columns of B) starts at an address that
//     may be 4, 8 or 12 bytes past a 16-byte boundary. The copy takes the aligned window around it
//     (3 chunks of A instead of 2, BN/4 + 1 chunks of B instead of BN/4) into a raw stage; the row's
//     shift s (0..3 floats) is the same for every tile, because a tile advances A by 8 floats and B by
//     8 rows of N floats, both multiples of 4.
//  2. One shared-to-shared pass per tile, a tile ahead: each thread reads its part of tile t + 1's raw
//     stage at the shift (one LDS.128 when aligned, four LDS.32 when not) and writes A transposed into
//     As[k][m] (4 STS.32, conflict-free) and, when B is misaligned, B realigned into Br[k][n] (STS.128).
//     The pass runs while tile t is computed, so the loop keeps one barrier per tile; the copies run two
//     tiles ahead instead of one (STAGES raw stages hold STAGES - 2 tiles in flight).
//  3. Edge tiles copy floats: the first two tiles and the last (where a window could start before the
//     matrix or end after it) use 4-byte copies with zero-fill into the same window positions, so the
//     pass is the same for every tile and no copy ever reads outside A or B. When a row of A (K % 4 == 0)
//     or of B (N % 4 == 0) is aligned, its windows never leave the matrix and every tile uses 16-byte
//     copies. The four cases (A, B aligned or not) are four instantiations of one body.
//  4. Fragments, warp tile, register double buffering, grouped block order and epilogue as in rung 14.

namespace rc15 {

__device__ __forceinline__ unsigned smemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Copy `bytes` (0 or the full size) of a 4- or 16-byte chunk; the rest of the chunk is zero-filled.
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
// The shift (0..3 floats) of element `index` of `p` past a 16-byte boundary; index may be negative.
__device__ __forceinline__ unsigned shiftOf(const float* p, long long index) {
  return unsigned((static_cast<long long>(reinterpret_cast<size_t>(p) >> 2) + index) & 3);
}

// Shared memory, in floats: STAGES raw stages (A windows BM x RA, B windows BK x LDB), then the two
// transposed A buffers (BK x LDA) and the two realigned B buffers (BK x LDB).
template <unsigned BM, unsigned BN, unsigned BK, unsigned STAGES>
struct Smem {
  static constexpr unsigned RA = BK + 4;   // a raw row of A: 3 chunks; 12 floats keep LDS.128 conflict-free
  static constexpr unsigned LDA = BM + 4;  // As[k][m]: 4 mod 32 banks per row
  static constexpr unsigned LDB = BN + 4;  // a raw row of B: BN / 4 + 1 chunks
  static constexpr unsigned RAW_A = BM * RA, STAGE = BM * RA + BK * LDB;
  static constexpr unsigned AS = STAGES * STAGE, BR = AS + 2 * BK * LDA;
  static constexpr unsigned FLOATS = BR + 2 * BK * LDB;
};

template <bool VA, bool VB, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS, unsigned STAGES>
struct Copier {
  using L = Smem<BM, BN, BK, STAGES>;
  static constexpr unsigned CHA = VA ? 2 : 3;             // chunks per raw row of A
  static constexpr unsigned CHB = VB ? BN / 4 : BN / 4 + 1;  // chunks per raw row of B
  static constexpr unsigned JA = (BM * CHA + THREADS - 1) / THREADS;
  static constexpr unsigned JB = (BK * CHB + THREADS - 1) / THREADS;
  const float* pa[JA];
  const float* pb[JB];
  unsigned da[JA], db[JB];  // offsets (floats) in a stage; ~0u: no copy for this slot
  const float *A, *B;
  int M, N, K, m0, n0, k0;
  long long bStep;

  __device__ __forceinline__ Copier(const float* A_, const float* B_, int M_, int N_, int K_, int m0_, int n0_,
                                    int k0_, unsigned tid)
      : A(A_), B(B_), M(M_), N(N_), K(K_), m0(m0_), n0(n0_), k0(k0_), bStep((long long)BK * N_) {
#pragma unroll
    for (unsigned j = 0; j < JA; ++j) {
      const unsigned e = j * THREADS + tid, m = e / CHA, c = e % CHA;
      const int r = min(m0 + int(m), M - 1);
      const long long at = (long long)r * K + k0;  // element k0 of row r (tile 0)
      pa[j] = A + (at - shiftOf(A, at) + 4 * c);
      da[j] = e < BM * CHA ? m * L::RA + 4 * c : ~0u;
    }
#pragma unroll
    for (unsigned j = 0; j < JB; ++j) {
      const unsigned e = j * THREADS + tid, k = e / CHB, c = e % CHB;
      const long long at = (long long)(k0 + int(k)) * N + n0;  // column n0 of row k0 + k (tile 0)
      const unsigned s = VB ? 0u : shiftOf(B, at);
      // The last chunk that holds a column of this block inside the row; later chunks re-read it.
      const unsigned last = (s + unsigned(min(N - 1 - n0, int(BN) - 1))) / 4;
      pb[j] = B + (at - s + 4 * min(c, last));
      db[j] = e < BK * CHB ? L::RAW_A + k * L::LDB + 4 * c : ~0u;
    }
  }

  // Tile `t` into the raw stage at shared address `st`. EDGE: float copies into the window positions,
  // zero-filled outside the matrix (an unaligned operand's first two tiles and its last).
  __device__ __forceinline__ void issue(unsigned st, int t, bool edge, unsigned tid) {
    const int kt = k0 + t * int(BK);  // first k of tile t
    if (!VA && edge) {
#pragma unroll
      for (unsigned j = 0; j < BM * BK / THREADS; ++j) {
        const unsigned e = j * THREADS + tid, m = e / BK, kk = e % BK;
        const int r = min(m0 + int(m), M - 1), k = kt + int(kk);
        const unsigned s = shiftOf(A, (long long)r * K + k0);
        cp4(st + (m * L::RA + s + kk) * 4, k >= 0 ? A + (long long)r * K + k : A, k >= 0 ? 4u : 0u);
      }
    } else {
#pragma unroll
      for (unsigned j = 0; j < JA; ++j) {
        // Tile 0 of an aligned A: a chunk is wholly before k = 0 (zero-filled) or wholly inside.
        const bool ok = !VA || t > 0 || kt + int(4 * (da[j] % L::RA / 4)) >= 0;
        if (da[j] != ~0u) cp16(st + da[j] * 4, ok ? pa[j] + t * int(BK) : A, ok ? 16u : 0u);
      }
    }
    if (!VB && edge) {
#pragma unroll
      for (unsigned j = 0; j < BK * BN / THREADS; ++j) {
        const unsigned e = j * THREADS + tid, k = e / BN, n = e % BN;
        const int kg = kt + int(k);
        const bool ok = kg >= 0 && n0 + int(n) < N;
        const unsigned s = shiftOf(B, (long long)(k0 + int(k)) * N + n0);
        cp4(st + (L::RAW_A + k * L::LDB + s + n) * 4, ok ? B + (long long)kg * N + n0 + n : B, ok ? 4u : 0u);
      }
    } else {
#pragma unroll
      for (unsigned j = 0; j < JB; ++j) {
        // Rows before k = 0 (tile 0 only) are zero-filled.
        const bool ok = t > 0 || kt + int((db[j] - L::RAW_A) / L::LDB) >= 0;
        if (db[j] != ~0u) cp16(st + db[j] * 4, ok ? pb[j] + t * bStep : B, ok ? 16u : 0u);
      }
    }
  }
};

// Tile in the raw stage `raw` -> As (transposed) and, for a misaligned B, Br (realigned).
template <bool VA, bool VB, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS, unsigned STAGES>
struct Pass {
  using L = Smem<BM, BN, BK, STAGES>;
  static constexpr unsigned PA = BM * BK / 4 / THREADS, PB = BK * BN / 4 / THREADS;
  unsigned sa[PA], sb[PB];

  __device__ __forceinline__ Pass(const float* A, const float* B, int M, int N, int K, int m0, int n0, int k0,
                                  unsigned tid) {
#pragma unroll
    for (unsigned j = 0; j < PA; ++j) {
      const int r = min(m0 + int((j * THREADS + tid) % BM), M - 1);
      sa[j] = VA ? 0u : shiftOf(A, (long long)r * K + k0);
    }
#pragma unroll
    for (unsigned j = 0; j < PB; ++j) {
      const unsigned k = (j * THREADS + tid) / (BN / 4);
      sb[j] = VB ? 0u : shiftOf(B, (long long)(k0 + int(k)) * N + n0);
    }
  }

  __device__ __forceinline__ void run(const float* raw, float* as, float* br, unsigned tid) const {
#pragma unroll
    for (unsigned j = 0; j < PA; ++j) {
      const unsigned e = j * THREADS + tid, m = e % BM, kq = e / BM;
      float v[4];
      if (VA) {
        const float4 x = *reinterpret_cast<const float4*>(&raw[m * L::RA + 4 * kq]);
        v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
      } else {
#pragma unroll
        for (unsigned i = 0; i < 4; ++i) v[i] = raw[m * L::RA + sa[j] + 4 * kq + i];
      }
#pragma unroll
      for (unsigned i = 0; i < 4; ++i) as[(4 * kq + i) * L::LDA + m] = v[i];
    }
    if (!VB) {
#pragma unroll
      for (unsigned j = 0; j < PB; ++j) {
        const unsigned e = j * THREADS + tid, k = e / (BN / 4), c = e % (BN / 4);
        const float* src = &raw[L::RAW_A + k * L::LDB + sb[j] + 4 * c];
        *reinterpret_cast<float4*>(&br[k * L::LDB + 4 * c]) = make_float4(src[0], src[1], src[2], src[3]);
      }
    }
  }
};

template <bool VA, bool VB, unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY,
          unsigned THREADS, unsigned STAGES, unsigned GROUP_M>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C,
                                     float* smem) {
  using L = Smem<BM, BN, BK, STAGES>;
  constexpr unsigned WTX = 32 / WTY;
  constexpr unsigned WARPS_N = BN / (NI * 4 * WTX);

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
  const int k0 = K - numTiles * int(BK);  // tiles end at K: only tile 0 is partial (k0 <= 0)
  Copier<VA, VB, BM, BN, BK, THREADS, STAGES> cp(A, B, M, N, K, m0, n0, k0, tid);
  const Pass<VA, VB, BM, BN, BK, THREADS, STAGES> pass(A, B, M, N, K, m0, n0, k0, tid);
  // Where tile t's fragments are read: As[t & 1]; Br[t & 1] or, for an aligned B, the raw stage itself.
  auto bTile = [&](int t) -> const float* {
    return VB ? smem + (t % int(STAGES)) * L::STAGE + L::RAW_A : smem + L::BR + (t & 1) * BK * L::LDB;
  };

  // Prologue: tiles 0 .. STAGES - 2 in flight; wait for 0 and 1, put tile STAGES - 1 in flight, pass tile 0.
#pragma unroll
  for (unsigned s = 0; s + 1 < STAGES; ++s) {
    if (int(s) < numTiles) cp.issue(sBase + s * L::STAGE * 4, int(s), s < 2 || int(s) == numTiles - 1, tid);
    commit();
  }
  waitGroups<STAGES - 3>();
  __syncthreads();
  if (int(STAGES) - 1 < numTiles)
    cp.issue(sBase + (STAGES - 1) * L::STAGE * 4, STAGES - 1, int(STAGES) - 1 == numTiles - 1, tid);
  commit();
  pass.run(smem, smem + L::AS, smem + L::BR, tid);
  __syncthreads();

  float4 fa[2][MI], fb[2][NI];
  {
    const float* as = smem + L::AS;
    const float* bs = bTile(0);
#pragma unroll
    for (unsigned s = 0; s < MI; ++s) fa[0][s] = *reinterpret_cast<const float4*>(&as[rowBase + s * 4 * WTY]);
#pragma unroll
    for (unsigned s = 0; s < NI; ++s) fb[0][s] = *reinterpret_cast<const float4*>(&bs[colBase + s * 4 * WTX]);
  }

  for (int t = 0; t < numTiles; ++t) {
    const float* as = smem + L::AS + (t & 1) * BK * L::LDA;
    const float* bs = bTile(t);
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      if (kk == 1 && t + 1 < numTiles) {
        // Tile t + 1 landed before the last barrier; its buffers were last read in tile t - 1.
        const int raw = (t + 1) % int(STAGES);
        pass.run(smem + raw * L::STAGE, smem + L::AS + ((t + 1) & 1) * BK * L::LDA,
                 smem + L::BR + ((t + 1) & 1) * BK * L::LDB, tid);
      }
      if (kk < BK - 1) {
#pragma unroll
        for (unsigned s = 0; s < MI; ++s)
          fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&as[(kk + 1) * L::LDA + rowBase + s * 4 * WTY]);
#pragma unroll
        for (unsigned s = 0; s < NI; ++s)
          fb[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&bs[(kk + 1) * L::LDB + colBase + s * 4 * WTX]);
      } else if (t + 1 < numTiles) {
        // Tile t + 2 has landed once at most STAGES - 3 groups are pending. After the barrier tile t + 1's
        // pass is visible and nobody reads tile t's stage any more: tile t + STAGES goes there.
        waitGroups<STAGES - 3>();
        __syncthreads();
        const int nt = t + int(STAGES);
        if (nt < numTiles) cp.issue(sBase + (t % int(STAGES)) * L::STAGE * 4, nt, nt == numTiles - 1, tid);
        commit();
        const float* na = smem + L::AS + ((t + 1) & 1) * BK * L::LDA;
        const float* nb = bTile(t + 1);
#pragma unroll
        for (unsigned s = 0; s < MI; ++s)
          fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&na[rowBase + s * 4 * WTY]);
#pragma unroll
        for (unsigned s = 0; s < NI; ++s)
          fb[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&nb[colBase + s * 4 * WTX]);
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
  }
  waitGroups<0>();  // no copy may still be writing shared memory when the block exits

  // Epilogue: C = alpha * acc + beta * C, C never read when beta == 0; float4 rows when C allows.
  const bool vc = (N % 4 == 0) && reinterpret_cast<size_t>(C) % 16 == 0;
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
      if (vc) {
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

}  // namespace rc15

template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned WTY, unsigned THREADS,
          unsigned STAGES, unsigned GROUP_M, unsigned MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_realigned_copies_any_shape(int M, int N, int K, float alpha, const float* __restrict__ A,
                                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  static_assert(BK == 8, "a tile is 8 k deep: 2 chunks of a row of A, 3 with the window");
  static_assert(BM % 32 == 0 && BN % 128 == 0, "As rows are BM + 4 floats (4 mod 32 banks); 32 lanes per row of Br");
  static_assert(WTY == 4 || WTY == 8, "fragments of a warp: WTY and 32 / WTY float4, at most 8 each");
  static_assert(BM % (MI * 4 * WTY) == 0 && BN % (NI * 4 * (32 / WTY)) == 0, "warp tiles must tile the block");
  static_assert((BM / (MI * 4 * WTY)) * (BN / (NI * 4 * (32 / WTY))) * 32 == THREADS, "one warp tile per warp");
  static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole pass units per thread");
  static_assert(THREADS % BM == 0 || BM % THREADS == 0, "a thread transposes rows of one shift");
  static_assert(STAGES >= 3, "copies run two tiles ahead: at least three raw stages");
  extern __shared__ __align__(16) float smem[];
  const bool va = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool vb = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  if (va && vb)
    rc15::gemm<true, true, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
  else if (va)
    rc15::gemm<true, false, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
  else if (vb)
    rc15::gemm<false, true, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
  else
    rc15::gemm<false, false, BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M>(M, N, K, alpha, A, B, beta, C, smem);
}
