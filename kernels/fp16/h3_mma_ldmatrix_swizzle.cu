// h3: mma.sync m16n8k16 + ldmatrix from an XOR-swizzled, multi-stage cp.async pipeline.
// Credit: mma.sync and ldmatrix as seed 001 teaches them; the XOR-swizzled shared tiles as NVIDIA CUTLASS's sm80
//   GEMMs lay them out; our implementation.
//
// C = alpha * A @ B + beta * C with fp16 A and B, fp32 accumulation and fp32 C.
// Layout: A row-major (M x K, lda = K), B column-major (stored as N rows of K, ldb = K),
// C row-major fp32 (ldc = N).
//
// Design (defaults BM x BN x BK = 128 x 256 x 32, warp tile 64 x 64, 8 warps, 4 stages):
//  * Block tile BM x BN, (BM/WM) x (BN/WN) warps, each owning a WM x WN tile of C held as
//    (WM/16) x (WN/8) m16n8 fp32 accumulators (128 floats per thread for 64 x 64).
//  * Shared memory: STAGES buffers of the A tile (BM rows of BK halves) and of the B tile
//    (BN rows of BK halves; B is column-major so its tile is "N rows of K" as well). No padding.
//    A tile is a sequence of 16-byte chunks q = row * (BK/8) + chunk; chunk q is stored at
//    chunk position  swz(q) = q ^ ((q >> 3) & 7)  i.e. within every 128-byte line (8 chunks)
//    the chunk index is XORed with the line number mod 8. The same swz() is used by the
//    cp.async writes and by the ldmatrix reads, so the layout is a pure permutation of chunks
//    inside each 128-byte line. For BK = 32 (4 chunks a row, 2 rows a line) and BK = 64
//    (8 chunks, 1 row a line) both the 8 threads of a cp.async phase (8 consecutive q in one
//    line) and the 8 row addresses of each ldmatrix 8x8 matrix (8 consecutive rows, same
//    logical chunk) land on 8 distinct 16-byte bank groups: conflict-free.
//  * Pipeline: STAGES-1 k-tiles in flight ahead of the one being multiplied, one commit group per
//    k-tile (empty groups at the tail keep the count uniform), cp.async.wait_group STAGES-2 and a
//    single __syncthreads per k-tile. The refill of the buffer freed by k-tile kt-1 is issued
//    right after that barrier.
//  * Register fragments are double-buffered across the k16 steps: the ldmatrix.x4 loads of
//    step s+1 (of the next k-tile for the last step) are issued before the mma.sync of step s.
//  * Block-index rasterization: consecutive block ids walk GROUP_M block rows down M before
//    moving along N, so blocks resident at the same time share A and B panels in L2.
//  * Epilogue: straight from the accumulators with float2 stores (each quad of lanes writes
//    32 contiguous bytes of a row); with beta == 0 C is never read.
//
// Backend nvrtc: template parameters, no host headers (only <cuda_fp16.h>).

#include <cuda_fp16.h>

__device__ __forceinline__ unsigned h3_smem_addr(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void h3_cp_async16(unsigned smem_addr, const void* gmem)
{
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(smem_addr),
                 "l"(gmem)
                 : "memory");
}

__device__ __forceinline__ void h3_cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N_PENDING>
__device__ __forceinline__ void h3_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_PENDING) : "memory");
}

__device__ __forceinline__ void h3_ldmatrix_x4(unsigned (&r)[4], unsigned smem_addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr));
}

__device__ __forceinline__ void h3_mma_16816(float (&d)[4], const unsigned (&a)[4],
                                             const unsigned (&b)[2])
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Position of logical 16-byte chunk q of a tile: XOR the chunk's index within its 128-byte line
// with the line number mod 8.
__device__ __forceinline__ unsigned h3_swz(unsigned q)
{
    return q ^ ((q >> 3) & 7u);
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
hgemm_mma_ldmatrix_swizzle(int M, int N, int K, float alpha, const __half* __restrict__ A,
                           const __half* __restrict__ B, float beta, float* __restrict__ C)
{
    constexpr int WARPS_M = BM / WM;
    constexpr int WARPS_N = BN / WN;
    constexpr int THREADS = WARPS_M * WARPS_N * 32;
    constexpr int MT = WM / 16;       // m16 tiles per warp
    constexpr int NT = WN / 8;        // n8 tiles per warp
    constexpr int KSTEPS = BK / 16;   // k16 steps per k-tile
    constexpr int RC = BK / 8;        // 16-byte chunks per tile row
    constexpr int A_CHUNKS = BM * RC;
    constexpr int B_CHUNKS = BN * RC;
    constexpr int A_ITERS = A_CHUNKS / THREADS;
    constexpr int B_ITERS = B_CHUNKS / THREADS;
    constexpr int ROWS_PER_ITER = THREADS / RC;
    constexpr unsigned A_STAGE_BYTES = BM * BK * 2;
    constexpr unsigned B_STAGE_BYTES = BN * BK * 2;

    static_assert(BK == 32 || BK == 64, "the swizzle is conflict-free for BK = 32 or 64");
    static_assert(BM % WM == 0 && BN % WN == 0, "warp tile must divide block tile");
    static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16");
    static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0,
                  "whole 16-byte chunks per thread");
    static_assert(THREADS % 64 == 0, "copy offsets rely on THREADS being a multiple of 64");
    static_assert(STAGES >= 2, "at least two stages");

    extern __shared__ __align__(128) unsigned char h3_smem[];
    const unsigned smem_a = h3_smem_addr(h3_smem);
    const unsigned smem_b = smem_a + STAGES * A_STAGE_BYTES;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int wid = tid >> 5;
    const int warp_m = wid / WARPS_N;
    const int warp_n = wid % WARPS_N;

    // ---- block rasterization: GROUP_M block rows at a time, column by column ----
    int block_m, block_n;
    {
        const int grid_n = gridDim.x;
        const int grid_m = gridDim.y;
        const int pid = blockIdx.y * grid_n + blockIdx.x;
        const int per_group = GROUP_M * grid_n;
        const int group = pid / per_group;
        const int first_m = group * GROUP_M;
        const int group_rows = min(grid_m - first_m, GROUP_M);
        const int in_group = pid - group * per_group;
        block_m = first_m + in_group % group_rows;
        block_n = in_group / group_rows;
    }
    const int bm = block_m * BM;
    const int bn = block_n * BN;

    // ---- global -> shared copy assignment: chunk q = tid + i * THREADS ----
    // Row of chunk q is q / RC; adding THREADS moves ROWS_PER_ITER rows down, i.e. THREADS/8
    // whole lines. THREADS is a multiple of 64 (static_assert), so (q >> 3) & 7 is unchanged
    // and swz(q + i*THREADS) = swz(q) + i*THREADS.
    const int ld_row = tid / RC;
    const int ld_chunk = tid % RC;
    const unsigned st_off = h3_swz((unsigned)tid) * 16u;  // same for A and B
    const __half* g_a = A + (size_t)(bm + ld_row) * K + ld_chunk * 8;
    const __half* g_b = B + (size_t)(bn + ld_row) * K + ld_chunk * 8;
    const size_t g_step = (size_t)ROWS_PER_ITER * K;

    auto load_tile = [&](int stage, int kt) {
        const int k0 = kt * BK;
        const unsigned sa = smem_a + stage * A_STAGE_BYTES + st_off;
        const unsigned sb = smem_b + stage * B_STAGE_BYTES + st_off;
#pragma unroll
        for (int i = 0; i < A_ITERS; ++i)
            h3_cp_async16(sa + i * THREADS * 16, g_a + i * g_step + k0);
#pragma unroll
        for (int i = 0; i < B_ITERS; ++i)
            h3_cp_async16(sb + i * THREADS * 16, g_b + i * g_step + k0);
    };

    // ---- ldmatrix addressing (byte offsets inside one stage) ----
    // A, m16 x k16 fragment i at k16 step ks: lane supplies row (lane & 15) of the m16 tile and
    // logical chunk 2*ks + (lane >> 4); matrices 0..3 = (rows 0-7, k 0-7), (rows 8-15, k 0-7),
    // (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a0..a3 of mma.m16n8k16.
    // B, two n8 tiles (2j, 2j+1) x k16 at step ks: lane supplies n row ((lane >> 4) << 3) +
    // (lane & 7) and logical chunk 2*ks + ((lane >> 3) & 1); matrices 0..3 = b0, b1 of tile 2j,
    // b0, b1 of tile 2j+1.
    // Moving to the next m16 (or n16) tile adds 16 rows = 16*RC chunks = 8 or 16 whole lines,
    // a multiple of 8, so the XOR term is unchanged and the offset just adds 16*BK*2 bytes.
    unsigned a_off[KSTEPS], b_off[KSTEPS];
    {
        const unsigned a_row = warp_m * WM + (lane & 15);
        const unsigned b_row = warp_n * WN + ((lane >> 4) << 3) + (lane & 7);
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            a_off[ks] = h3_swz(a_row * RC + 2 * ks + (lane >> 4)) * 16u;
            b_off[ks] = h3_swz(b_row * RC + 2 * ks + ((lane >> 3) & 1)) * 16u;
        }
    }
    constexpr unsigned FRAG_ROWS_BYTES = 16 * BK * 2;  // 16 rows of a tile

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    unsigned fa[2][MT][4];
    unsigned fb[2][NT][2];

    auto load_frags = [&](int buf, int stage, int ks) {
        const unsigned sa = smem_a + stage * A_STAGE_BYTES + a_off[ks];
        const unsigned sb = smem_b + stage * B_STAGE_BYTES + b_off[ks];
#pragma unroll
        for (int i = 0; i < MT; ++i) h3_ldmatrix_x4(fa[buf][i], sa + i * FRAG_ROWS_BYTES);
#pragma unroll
        for (int j = 0; j < NT / 2; ++j) {
            unsigned r[4];
            h3_ldmatrix_x4(r, sb + j * FRAG_ROWS_BYTES);
            fb[buf][2 * j][0] = r[0];
            fb[buf][2 * j][1] = r[1];
            fb[buf][2 * j + 1][0] = r[2];
            fb[buf][2 * j + 1][1] = r[3];
        }
    };

    const int KT = K / BK;

    // ---- prologue: k-tiles 0 .. STAGES-2 in flight ----
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        h3_cp_async_commit();
    }
    h3_cp_async_wait<STAGES - 2>();  // k-tile 0 has landed
    __syncthreads();
    load_frags(0, 0, 0);

    int read_stage = 0;            // buffer of k-tile kt
    int write_stage = STAGES - 1;  // buffer of k-tile kt + STAGES - 1 (= that of kt - 1)

    for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks == KSTEPS - 1) {
                // The next k16 step is k-tile kt+1's first: wait for it to land. The barrier
                // also tells that every warp has finished its ldmatrix reads of k-tile kt's
                // buffer (the last were issued at step KSTEPS-2), which the refill at ks == 0
                // of the next iteration overwrites.
                h3_cp_async_wait<STAGES - 2>();
                __syncthreads();
                read_stage = (read_stage + 1 == STAGES) ? 0 : read_stage + 1;
            }
            // Prefetch the fragments of the next k16 step into the other register buffer.
            // (After the last k-tile this reads a buffer whose contents are never used.)
            load_frags((ks + 1) & 1, read_stage, (ks + 1) % KSTEPS);

            if (ks == 0) {
                // Refill the buffer k-tile kt-1 used (all warps passed the barrier since).
                const int kn = kt + STAGES - 1;
                if (kn < KT) load_tile(write_stage, kn);
                h3_cp_async_commit();
                write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;
            }

            const int cur = ks & 1;
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int jj = 0; jj < NT; ++jj) {
                    const int j = (i & 1) ? (NT - 1 - jj) : jj;  // serpentine: reuse B regs
                    h3_mma_16816(acc[i][j], fa[cur][i], fb[cur][j]);
                }
        }
    }
    h3_cp_async_wait<0>();  // only empty groups can be left; drain them anyway

    // ---- epilogue: alpha * acc (+ beta * C), float2 per row pair ----
    const int g = lane >> 2;        // row within the m16 tile (and +8)
    const int t2 = (lane & 3) * 2;  // column pair within the n8 tile
    float* c_base = C + (size_t)(bm + warp_m * WM + g) * N + bn + warp_n * WN + t2;
    if (beta == 0.0f) {  // BLAS semantics: C is not read
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                float* p = c_base + (size_t)(i * 16) * N + j * 8;
                *reinterpret_cast<float2*>(p) =
                    make_float2(alpha * acc[i][j][0], alpha * acc[i][j][1]);
                *reinterpret_cast<float2*>(p + (size_t)8 * N) =
                    make_float2(alpha * acc[i][j][2], alpha * acc[i][j][3]);
            }
    } else {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                float2* p0 = reinterpret_cast<float2*>(c_base + (size_t)(i * 16) * N + j * 8);
                float2* p1 = reinterpret_cast<float2*>(c_base + (size_t)(i * 16 + 8) * N + j * 8);
                const float2 c0 = *p0;
                const float2 c1 = *p1;
                *p0 = make_float2(alpha * acc[i][j][0] + beta * c0.x,
                                  alpha * acc[i][j][1] + beta * c0.y);
                *p1 = make_float2(alpha * acc[i][j][2] + beta * c1.x,
                                  alpha * acc[i][j][3] + beta * c1.y);
            }
    }
}
