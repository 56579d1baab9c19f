// h2: WMMA with a multi-stage cp.async pipeline (seed 001, "multi stage", taken further).
// Credit: the multi-stage pipeline of seed 001's "multi stage" section (after KnowingNothing/MatmulTutorial);
//   the warp sub-tiles, the cp.async pipeline and the padding are ours.
//
// C = alpha * A @ B + beta * C with fp16 A and B, fp32 accumulation and fp32 C.
// Layout: A row-major (M x K, lda = K), B column-major (stored as N rows of K, ldb = K),
// C row-major fp32 (ldc = N).
//
// Technique:
//  * One block computes a BM x BN tile of C with (BM/WM) x (BN/WN) warps; each warp owns a
//    WM x WN sub-tile of (WM/16) x (WN/16) 16x16 accumulator fragments and the whole BK of every
//    k-tile, so the warps never have to add up each other's partial sums.
//  * STAGES shared-memory buffers per operand are filled with asynchronous 16-byte copies
//    (cp.async.cg.shared.global, one commit group per k-tile). While the warps multiply k-tile
//    kt, the copies of k-tiles kt+1 .. kt+STAGES-1 are in flight. One __syncthreads per k-tile.
//  * Shared-memory rows are padded by 8 halves (16 bytes) so the rows of a fragment fall in
//    different banks.
//  * The epilogue works on the accumulator fragments directly: with beta != 0 the C fragment is
//    loaded from global memory and combined element-wise; with beta == 0 C is never read.
//
// Compiled with nvcc (backend: nvcc) because of <mma.h>: extern "C", tunables are macros.
// Needs dynamic shared memory of STAGES * (BM + BN) * (BK + 8) * 2 bytes.

#include <cuda_fp16.h>
#include <mma.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 3
#endif

#define H2_PAD 8                        // halves of padding per shared-memory row
#define H2_LDS (BK + H2_PAD)            // shared-memory row pitch, in halves
#define H2_WARPS_M (BM / WM)
#define H2_WARPS_N (BN / WN)
#define H2_THREADS (H2_WARPS_M * H2_WARPS_N * 32)
#define H2_FM (WM / 16)
#define H2_FN (WN / 16)

static_assert(BM % WM == 0 && BN % WN == 0, "the warp tile must divide the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "tiles must be multiples of 16");
static_assert((BM * BK / 8) % H2_THREADS == 0 && (BN * BK / 8) % H2_THREADS == 0,
              "every thread must copy a whole number of 16-byte chunks");
static_assert(STAGES >= 2, "at least two stages");

__device__ __forceinline__ void h2_cp_async16(unsigned smem_addr, const void* gmem)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem)
                 : "memory");
}
__device__ __forceinline__ void h2_cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N_PENDING>
__device__ __forceinline__ void h2_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_PENDING) : "memory");
}

extern "C" __global__ void __launch_bounds__(H2_THREADS)
hgemm_wmma_multistage(int M, int N, int K, float alpha, const __half* __restrict__ A,
                      const __half* __restrict__ B, float beta, float* __restrict__ C)
{
    using namespace nvcuda;

    extern __shared__ __align__(128) unsigned char h2_smem[];
    __half* s_a = reinterpret_cast<__half*>(h2_smem);    // [STAGES][BM][H2_LDS]
    __half* s_b = s_a + STAGES * BM * H2_LDS;             // [STAGES][BN][H2_LDS]

    const int tid = threadIdx.x;
    const int wid = tid / 32;
    const int warp_m = wid / H2_WARPS_N;
    const int warp_n = wid % H2_WARPS_N;
    const int bm = blockIdx.y * BM;
    const int bn = blockIdx.x * BN;

    const __half* a_blk = A + (size_t)bm * K;
    const __half* b_blk = B + (size_t)bn * K;

    constexpr int RC = BK / 8;                                 // 16-byte chunks per tile row
    constexpr int A_ITERS = BM * RC / H2_THREADS;
    constexpr int B_ITERS = BN * RC / H2_THREADS;
    constexpr int ROWS_PER_ITER = H2_THREADS / RC;

    // This thread's chunk: row ld_r (+ i * ROWS_PER_ITER), column ld_c (halves).
    const int ld_r = tid / RC;
    const int ld_c = (tid % RC) * 8;
    const unsigned s_a_addr = (unsigned)__cvta_generic_to_shared(s_a + ld_r * H2_LDS + ld_c);
    const unsigned s_b_addr = (unsigned)__cvta_generic_to_shared(s_b + ld_r * H2_LDS + ld_c);
    const __half* g_a = a_blk + (size_t)ld_r * K + ld_c;
    const __half* g_b = b_blk + (size_t)ld_r * K + ld_c;

    auto load_tile = [&](int stage, int kt) {
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < A_ITERS; ++i)
            h2_cp_async16(s_a_addr + (unsigned)((stage * BM + i * ROWS_PER_ITER) * H2_LDS * 2),
                          g_a + (size_t)i * ROWS_PER_ITER * K + k0);
#pragma unroll
        for (int i = 0; i < B_ITERS; ++i)
            h2_cp_async16(s_b_addr + (unsigned)((stage * BN + i * ROWS_PER_ITER) * H2_LDS * 2),
                          g_b + (size_t)i * ROWS_PER_ITER * K + k0);
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[H2_FM][H2_FN];
#pragma unroll
    for (int i = 0; i < H2_FM; ++i)
#pragma unroll
        for (int j = 0; j < H2_FN; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    const int KT = K / BK;

    // Prologue: k-tiles 0 .. STAGES-2 in flight, one commit group each (empty ones too, so that
    // the group count stays in step with the k-tile count).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        h2_cp_async_commit();
    }

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[H2_FM];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[H2_FN];

    int read_stage = 0;
    int write_stage = STAGES - 1;
    for (int kt = 0; kt < KT; ++kt) {
        // k-tile kt has landed (at most STAGES-2 younger groups pending); the barrier makes it
        // visible to every warp and also tells that everyone is done with k-tile kt-1, whose
        // buffer (write_stage) is refilled just below.
        h2_cp_async_wait<STAGES - 2>();
        __syncthreads();

        const int kn = kt + STAGES - 1;
        if (kn < KT) load_tile(write_stage, kn);
        h2_cp_async_commit();
        write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;

        const __half* ta = s_a + (read_stage * BM + warp_m * WM) * H2_LDS;
        const __half* tb = s_b + (read_stage * BN + warp_n * WN) * H2_LDS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
#pragma unroll
            for (int i = 0; i < H2_FM; ++i)
                wmma::load_matrix_sync(fa[i], ta + (i * 16) * H2_LDS + kk, H2_LDS);
#pragma unroll
            for (int j = 0; j < H2_FN; ++j)
                wmma::load_matrix_sync(fb[j], tb + (j * 16) * H2_LDS + kk, H2_LDS);
#pragma unroll
            for (int i = 0; i < H2_FM; ++i)
#pragma unroll
                for (int j = 0; j < H2_FN; ++j)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        read_stage = (read_stage + 1 == STAGES) ? 0 : read_stage + 1;
    }
    h2_cp_async_wait<0>();  // only empty groups can be left; drain them anyway

    // Epilogue straight from the fragments: alpha * acc (+ beta * C).
    float* c_warp = C + (size_t)(bm + warp_m * WM) * N + bn + warp_n * WN;
    if (beta == 0.0f) {  // BLAS semantics: C is not read
#pragma unroll
        for (int i = 0; i < H2_FM; ++i)
#pragma unroll
            for (int j = 0; j < H2_FN; ++j) {
#pragma unroll
                for (int e = 0; e < acc[i][j].num_elements; ++e) acc[i][j].x[e] *= alpha;
                wmma::store_matrix_sync(c_warp + (size_t)(i * 16) * N + j * 16, acc[i][j], N,
                                        wmma::mem_row_major);
            }
    } else {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
#pragma unroll
        for (int i = 0; i < H2_FM; ++i)
#pragma unroll
            for (int j = 0; j < H2_FN; ++j) {
                float* p = c_warp + (size_t)(i * 16) * N + j * 16;
                wmma::load_matrix_sync(fc, p, N, wmma::mem_row_major);
#pragma unroll
                for (int e = 0; e < fc.num_elements; ++e)
                    fc.x[e] = alpha * acc[i][j].x[e] + beta * fc.x[e];
                wmma::store_matrix_sync(p, fc, N, wmma::mem_row_major);
            }
    }
}
