// Rung 13: the top of the fp32 ladder in CUDA C, for any M, N, K >= 1.
// Credit: builds on the warptiling and double buffering (kernels 10 and 11) of Simon Boehm's "How to Optimize
//   a CUDA Matmul Kernel for cuBLAS-like Performance" (https://siboehm.com/articles/22/CUDA-MMM); the any-shape
//   pipeline is ours.
//
// Each thread computes an (MI*4) x (NI*4) tile of C as MI x NI sub-tiles of 4 x 4. A warp is
// a 4 (rows) x 8 (columns) grid of threads, so one sub-tile row of a warp is 16 x 32 of C and
// every fragment comes from shared memory with one LDS.128: the 4 (A) or 8 (B) distinct
// float4 a warp reads at one k are contiguous, so the loads are free of bank conflicts.
//
// Steps over rung 12, each for a reason ncu gave there:
//  1. Two shared stages and global -> register prefetch: the loads of tile t+1 are issued
//     before the math of tile t and stored to the other stage after it, so one
//     __syncthreads per BK-deep tile suffices and the load latency hides behind 512 FFMA.
//  2. Register double buffering: the fragments of step k+1 are read from shared memory while
//     the FFMAs of step k run (two fragment sets, frag[k & 1]).
//  3. Conflict-free stores: A is transposed into As[k][m] with rows padded to BM + 4 floats,
//     so the 4 scalar stores of a thread's float4 of A (k, k+1, k+2, k+3 of one row) land in 32
//     distinct banks across the warp (bank = 4k + m mod 32; 16 rows x 2 halves of BK = 8);
//     B keeps its layout and is stored with STS.128 (rows of 512 contiguous bytes).
//  4. Grouped block order: a 1D grid walks GROUP_M tile-rows of C column by column, so the
//     blocks that run together share panels of A and B in L2.
//  5. Any shape: every load is predicated and zero-filled past M, N or K (the k loop runs
//     cdiv(K, BK) tiles), every store is predicated. 128-bit global loads and stores need
//     16-byte rows: when K % 4 == 0, N % 4 == 0 and the pointers are 16-byte aligned the
//     kernel takes the vector path (a float4 is then wholly inside or outside the matrix, so
//     one predicate per float4), otherwise the scalar path (4 predicated LDG.32 per float4).
//     The test is made once per block at run time; both paths share the shared-memory layout
//     and the inner loop, which has no predicates at all.
//  6. The epilogue stores each 4 x 4 sub-tile row as a float4; the 8 threads of a warp row
//     write 128 contiguous bytes, so every STG.128 fills whole 32-byte sectors and staging C
//     through shared memory would not save any traffic.
// BK is 8: with the pad of 4 floats the transposed stores are conflict-free only for BK = 8.

namespace pas {

// Predicated global loads (zero when p is false). Written as volatile PTX so that the compiler keeps
// them where the source issues them, at the top of the tile; as plain C++ ternaries the front end
// sank them next to their use (the shared store after the math), which exposed their latency
// (-16% at 4096 in the first H100 sweep).
__device__ __forceinline__ float4 ldg4(const float* ptr, bool p) {
  float4 v;
  asm volatile(
      "{\n .reg .pred q;\n setp.ne.b32 q, %5, 0;\n"
      " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @q ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];\n}\n"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(ptr), "r"(int(p)));
  return v;
}

__device__ __forceinline__ float ldg1(const float* ptr, bool p) {
  float v;
  asm volatile(
      "{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n mov.b32 %0, 0;\n"
      " @q ld.global.nc.f32 %0, [%1];\n}\n"
      : "=f"(v)
      : "l"(ptr), "r"(int(p)));
  return v;
}

template <bool VEC, unsigned BM, unsigned BN, unsigned BK, unsigned THREADS>
struct Loader {
  static constexpr unsigned A_LD = BM * BK / 4 / THREADS;  // float4 of A per thread per tile
  static constexpr unsigned B_LD = BK * BN / 4 / THREADS;
  float4 a[A_LD];
  float4 b[B_LD];
  const float* pa[A_LD];  // this thread's float4 of A and of B in the next tile
  const float* pb[B_LD];
  int ka[A_LD], kb[B_LD];  // their k in the first tile (negative: before the matrix)
  int nb[B_LD];            // column of B (scalar path)

  // Edges without predicates in the loop:
  //  - rows of A past M and columns of B past N are clamped to the last row / column (float4): they
  //    only feed rows and columns of C that are never stored, so any finite or not value will do;
  //  - the first tile starts at k0 = K - cdiv(K, BK) * BK <= 0, so the partial tile comes first and
  //    every later tile lies wholly inside K: only the first load tests k (zero fill before k = 0).
  // The scalar path (N % 4 != 0) keeps a loop-invariant predicate per column of B.
  __device__ __forceinline__ Loader(const float* A, const float* B, int M, int N, int K, int m0, int n0,
                                    int k0, unsigned tid) {
#pragma unroll
    for (unsigned i = 0; i < A_LD; ++i) {
      const unsigned p = tid + i * THREADS;
      const int m = min(m0 + int(p / (BK / 4)), M - 1);
      ka[i] = k0 + int(p % (BK / 4)) * 4;
      pa[i] = A + (long long)m * K + ka[i];
    }
#pragma unroll
    for (unsigned i = 0; i < B_LD; ++i) {
      const unsigned p = tid + i * THREADS;
      kb[i] = k0 + int(p / (BN / 4));
      nb[i] = n0 + int(p % (BN / 4)) * 4;
      pb[i] = B + (long long)kb[i] * N + (VEC ? min(nb[i], N - 4) : nb[i]);
    }
  }

  // Load the next tile into registers, then step the pointers by BK. FIRST: the first tile, whose
  // leading k may lie before column 0 of A / row 0 of B (zero fill there).
  template <bool FIRST>
  __device__ __forceinline__ void load(int N) {
#pragma unroll
    for (unsigned i = 0; i < A_LD; ++i) {
      const float* src = pa[i];
      const int k = ka[i];
      if (VEC) {  // K % 4 == 0, so a float4 lies wholly before or after k = 0
        a[i] = ldg4(src, !FIRST || k >= 0);
      } else {
        a[i].x = ldg1(src + 0, !FIRST || k + 0 >= 0);
        a[i].y = ldg1(src + 1, !FIRST || k + 1 >= 0);
        a[i].z = ldg1(src + 2, !FIRST || k + 2 >= 0);
        a[i].w = ldg1(src + 3, !FIRST || k + 3 >= 0);
      }
      pa[i] += BK;
    }
#pragma unroll
    for (unsigned i = 0; i < B_LD; ++i) {
      const float* src = pb[i];
      const bool rowOk = !FIRST || kb[i] >= 0;
      if (VEC) {
        b[i] = ldg4(src, rowOk);
      } else {
        const int n = nb[i];
        b[i].x = ldg1(src + 0, rowOk && n + 0 < N);
        b[i].y = ldg1(src + 1, rowOk && n + 1 < N);
        b[i].z = ldg1(src + 2, rowOk && n + 2 < N);
        b[i].w = ldg1(src + 3, rowOk && n + 3 < N);
      }
      pb[i] += (long long)BK * N;
    }
  }

  // As[k][m] (row stride LDA = BM + 4), Bs[k][n] (row stride BN).
  __device__ __forceinline__ void store(float* As, float* Bs, unsigned tid) const {
    constexpr unsigned LDA = BM + 4;
#pragma unroll
    for (unsigned i = 0; i < A_LD; ++i) {
      const unsigned p = tid + i * THREADS;
      const unsigned m = p / (BK / 4), k = (p % (BK / 4)) * 4;
      As[(k + 0) * LDA + m] = a[i].x;
      As[(k + 1) * LDA + m] = a[i].y;
      As[(k + 2) * LDA + m] = a[i].z;
      As[(k + 3) * LDA + m] = a[i].w;
    }
#pragma unroll
    for (unsigned i = 0; i < B_LD; ++i) {
      const unsigned p = tid + i * THREADS;
      const unsigned k = p / (BN / 4), n = (p % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[k * BN + n]) = b[i];
    }
  }
};

template <bool VEC, unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI,
          unsigned THREADS, unsigned GROUP_M>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr unsigned LDA = BM + 4;
  constexpr unsigned WARPS_N = BN / (NI * 32);
  constexpr unsigned A_STAGE = BK * LDA, B_STAGE = BK * BN;

  // Grouped block order (step 4).
  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
  const int perGroup = GROUP_M * tilesN;
  const int bid = blockIdx.x;
  const int firstM = (bid / perGroup) * GROUP_M;
  const int groupRows = min(tilesM - firstM, int(GROUP_M));
  const int tileM = firstM + (bid % perGroup) % groupRows;
  const int tileN = (bid % perGroup) / groupRows;
  const int m0 = tileM * BM, n0 = tileN * BN;

  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned ty = lane / 8, tx = lane % 8;
  const unsigned rowBase = (warp / WARPS_N) * (MI * 16) + ty * 4;  // + s * 16
  const unsigned colBase = (warp % WARPS_N) * (NI * 32) + tx * 4;  // + s * 32

  __shared__ __align__(16) float smem[2 * BK * (BM + 4) + 2 * BK * BN];
  float* As = smem;
  float* Bs = smem + 2 * A_STAGE;

  float acc[MI * 4][NI * 4];
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i)
#pragma unroll
    for (unsigned j = 0; j < NI * 4; ++j) acc[i][j] = 0.f;

  const int numTiles = (K + BK - 1) / BK;
  Loader<VEC, BM, BN, BK, THREADS> ld(A, B, M, N, K, m0, n0, K - numTiles * int(BK), tid);
  ld.template load<true>(N);
  ld.store(As, Bs, tid);
  __syncthreads();

  float4 fa[2][MI], fb[2][NI];
#pragma unroll
  for (unsigned s = 0; s < MI; ++s) fa[0][s] = *reinterpret_cast<const float4*>(&As[rowBase + s * 16]);
#pragma unroll
  for (unsigned s = 0; s < NI; ++s) fb[0][s] = *reinterpret_cast<const float4*>(&Bs[colBase + s * 32]);

  unsigned stage = 0;
  for (int t = 0; t < numTiles; ++t) {
    const bool more = t + 1 < numTiles;
    if (more) ld.template load<false>(N);  // step 1: lands during the math
    const float* as = As + stage * A_STAGE;
    const float* bs = Bs + stage * B_STAGE;
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      if (kk == BK - 1 && more) {
        ld.store(As + (stage ^ 1) * A_STAGE, Bs + (stage ^ 1) * B_STAGE, tid);
        __syncthreads();  // the other stage was last read before the previous barrier
        as = As + (stage ^ 1) * A_STAGE;
        bs = Bs + (stage ^ 1) * B_STAGE;
      }
      // Step 2: fragments of the next k (or of k = 0 of the next tile) while this k computes.
      if (kk < BK - 1 || more) {
        const unsigned kn = (kk + 1) % BK;
#pragma unroll
        for (unsigned s = 0; s < MI; ++s)
          fa[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&as[kn * LDA + rowBase + s * 16]);
#pragma unroll
        for (unsigned s = 0; s < NI; ++s)
          fb[(kk + 1) & 1][s] = *reinterpret_cast<const float4*>(&bs[kn * BN + colBase + s * 32]);
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
    stage ^= 1;
  }

  // Epilogue (step 6): C = alpha * acc + beta * C, never reading C when beta == 0.
#pragma unroll
  for (unsigned i = 0; i < MI * 4; ++i) {
    const int m = m0 + int(rowBase + (i / 4) * 16 + i % 4);
    if (m >= M) continue;
    float* cRow = C + size_t(m) * N;
#pragma unroll
    for (unsigned s = 0; s < NI; ++s) {
      const int n = n0 + int(colBase + s * 32);
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

// Both paths are separate (not inlined) functions: inlined together, the scalar path made the register
// allocator of the whole kernel spill and sink the vector path's prefetch loads toward their use
// (-16% at 4096 in the first H100 sweep; with only the scalar path out of line, -5.6% in the second).
// Each path has its own shared tile (2 x 16.6 KB).
template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned THREADS,
          unsigned GROUP_M>
__device__ __noinline__ void gemmVector(int M, int N, int K, float alpha, const float* __restrict__ A,
                                        const float* __restrict__ B, float beta, float* __restrict__ C) {
  gemm<true, BM, BN, BK, MI, NI, THREADS, GROUP_M>(M, N, K, alpha, A, B, beta, C);
}
template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned THREADS,
          unsigned GROUP_M>
__device__ __noinline__ void gemmScalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                                        const float* __restrict__ B, float beta, float* __restrict__ C) {
  gemm<false, BM, BN, BK, MI, NI, THREADS, GROUP_M>(M, N, K, alpha, A, B, beta, C);
}

}  // namespace pas

template <unsigned BM, unsigned BN, unsigned BK, unsigned MI, unsigned NI, unsigned THREADS,
          unsigned GROUP_M, unsigned MINBLOCKS>
__global__ void __launch_bounds__(THREADS, MINBLOCKS)
sgemm_pipelined_any_shape(int M, int N, int K, float alpha, const float* __restrict__ A,
                          const float* __restrict__ B, float beta, float* __restrict__ C) {
  static_assert(BK == 8, "the padded transposed layout of As is conflict-free for BK = 8");
  static_assert(BM % (MI * 16) == 0 && BN % (NI * 32) == 0, "warp tiles must tile the block tile");
  static_assert((BM / (MI * 16)) * (BN / (NI * 32)) * 32 == THREADS, "one warp tile per warp");
  static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0,
                "every thread loads the same number of float4 of A and of B");
  const bool vec = (K % 4 == 0) && (N % 4 == 0) &&
                   ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B) |
                     reinterpret_cast<size_t>(C)) % 16 == 0);
  if (vec)
    pas::gemmVector<BM, BN, BK, MI, NI, THREADS, GROUP_M>(M, N, K, alpha, A, B, beta, C);
  else
    pas::gemmScalar<BM, BN, BK, MI, NI, THREADS, GROUP_M>(M, N, K, alpha, A, B, beta, C);
}
