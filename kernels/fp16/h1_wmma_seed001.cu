// h1: the first WMMA kernel of seed 001 ("gemm with mma").
// Credit: our implementation of seed 001's first WMMA kernel (gemm_kernel_v4 of its "gemm with mma" notes).
//
// C = alpha * A @ B + beta * C with fp16 A and B, fp32 accumulation and fp32 C.
// Layout: A row-major (M x K, lda = K), B column-major (stored as N rows of K, ldb = K),
// C row-major fp32 (ldc = N).
//
// Technique (seed 001): one block computes a BM x BN tile of C, marching along K in steps of
// BK. Each k-tile of A (BM x BK) and of B (BN x BK) is copied global -> shared with 16-byte
// (8-half) vector loads. The warps of the block split the BK slice between them: warp w
// multiplies the 16-wide k-slices w, w + WARPS, ... of the tile with 16x16x16 WMMA fragments
// and accumulates a full BM x BN set of partial sums of its own. After the K loop the warps'
// partial sums go through shared memory (store_matrix_sync) and are added up, then the
// epilogue applies alpha/beta and writes C. When beta == 0, C is never read.
//
// Compiled with nvcc (backend: nvcc) because of <mma.h>: extern "C", tunables are macros.

#include <cuda_fp16.h>
#include <mma.h>

#ifndef BM
#define BM 32
#endif
#ifndef BN
#define BN 32
#endif
#ifndef BK
#define BK 32
#endif
#ifndef THREADS
#define THREADS 64
#endif

#define H1_WMMA 16
#define H1_WARPS (THREADS / 32)
#define H1_FRAG_M (BM / H1_WMMA)
#define H1_FRAG_N (BN / H1_WMMA)

static_assert(BM % 16 == 0 && BN % 16 == 0 && BK % 16 == 0, "tiles must be multiples of 16");
static_assert(THREADS % 32 == 0, "THREADS must be a whole number of warps");
static_assert(BN % 4 == 0, "the epilogue stores float4s");

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_wmma_seed001(int M, int N, int K, float alpha, const __half* __restrict__ A,
                   const __half* __restrict__ B, float beta, float* __restrict__ C)
{
    using namespace nvcuda;

    // Operand tiles, then one BM x BN fp32 tile of partial sums per warp.
    __shared__ __align__(32) __half s_a[BM * BK];  // [BM][BK], row-major
    __shared__ __align__(32) __half s_b[BN * BK];  // [BN][BK], i.e. a BK x BN col-major tile
    __shared__ __align__(32) float s_c[H1_WARPS * BM * BN];

    const int tid = threadIdx.x;
    const int wid = tid / 32;
    const int bm = blockIdx.y * BM;  // first row of C of this block
    const int bn = blockIdx.x * BN;  // first column of C of this block

    const __half* a_blk = A + (size_t)bm * K;  // rows bm.. of A
    const __half* b_blk = B + (size_t)bn * K;  // columns bn.. of B (stored as rows of K)

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[H1_FRAG_M][H1_FRAG_N];
#pragma unroll
    for (int i = 0; i < H1_FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < H1_FRAG_N; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;

    constexpr int CHUNKS_PER_ROW = BK / 8;  // 8 halves = one float4
    constexpr int A_CHUNKS = BM * CHUNKS_PER_ROW;
    constexpr int B_CHUNKS = BN * CHUNKS_PER_ROW;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // global -> shared, one float4 (8 halves) per copy
        for (int q = tid; q < A_CHUNKS; q += THREADS) {
            const int r = q / CHUNKS_PER_ROW, c = (q % CHUNKS_PER_ROW) * 8;
            *reinterpret_cast<float4*>(&s_a[r * BK + c]) =
                *reinterpret_cast<const float4*>(&a_blk[(size_t)r * K + k0 + c]);
        }
        for (int q = tid; q < B_CHUNKS; q += THREADS) {
            const int r = q / CHUNKS_PER_ROW, c = (q % CHUNKS_PER_ROW) * 8;
            *reinterpret_cast<float4*>(&s_b[r * BK + c]) =
                *reinterpret_cast<const float4*>(&b_blk[(size_t)r * K + k0 + c]);
        }
        __syncthreads();

        // warp wid takes the 16-wide k-slices wid, wid + WARPS, ... of this tile
        for (int kk = wid * 16; kk < BK; kk += H1_WARPS * 16) {
#pragma unroll
            for (int i = 0; i < H1_FRAG_M; ++i) {
                wmma::load_matrix_sync(fa, &s_a[(i * 16) * BK + kk], BK);
#pragma unroll
                for (int j = 0; j < H1_FRAG_N; ++j) {
                    wmma::load_matrix_sync(fb, &s_b[(j * 16) * BK + kk], BK);
                    wmma::mma_sync(acc[i][j], fa, fb, acc[i][j]);
                }
            }
        }
        __syncthreads();  // the tiles are overwritten by the next iteration
    }

    // Cross-warp reduction: every warp stores its partial BM x BN tile, then all threads add.
    float* my_c = s_c + wid * BM * BN;
#pragma unroll
    for (int i = 0; i < H1_FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < H1_FRAG_N; ++j)
            wmma::store_matrix_sync(&my_c[(i * 16) * BN + j * 16], acc[i][j], BN,
                                    wmma::mem_row_major);
    __syncthreads();

    for (int q = tid; q < BM * BN / 4; q += THREADS) {
        const int r = (q * 4) / BN, c = (q * 4) % BN;
        float4 s = *reinterpret_cast<const float4*>(&s_c[r * BN + c]);
#pragma unroll
        for (int w = 1; w < H1_WARPS; ++w) {
            const float4 p = *reinterpret_cast<const float4*>(&s_c[w * BM * BN + r * BN + c]);
            s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
        }
        float4* dst = reinterpret_cast<float4*>(&C[(size_t)(bm + r) * N + bn + c]);
        float4 o;
        if (beta == 0.0f) {  // BLAS semantics: C is not read
            o.x = alpha * s.x; o.y = alpha * s.y; o.z = alpha * s.z; o.w = alpha * s.w;
        } else {
            const float4 old = *dst;
            o.x = alpha * s.x + beta * old.x;
            o.y = alpha * s.y + beta * old.y;
            o.z = alpha * s.z + beta * old.z;
            o.w = alpha * s.w + beta * old.w;
        }
        *dst = o;
    }
}
