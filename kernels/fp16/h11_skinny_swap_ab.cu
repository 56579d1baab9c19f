// h11: skinny problems (M <= 64) computed transposed, C^T = B^T A^T, so that M is the wgmma's N and no row of a
// 64-row wgmma is wasted; split-K as in h8.
// Credit: no public write-up; computing C^T = B^T A^T so that a small M is the MMA's N follows what ncu shows
//   cuBLAS's skinny kernels doing; our implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32. M, N any size (TMA zero-fills the
// boxes past the edges, stores are predicated); K a multiple of 8 (TMA's rows must be multiples of 16 bytes).
//
// What limits h8 at M = 16 (16 x 4096 x 4096 on the H100, benchmarks/2026-11-25_h100_pingpong): a wgmma is 64
// rows tall, so with M on its M side 48 of every 64 rows are TMA's zero fill; ncu counted 4x the FLOPs executed,
// and half the bytes in flight of cuBLAS's kernel, which runs a 128 x 16 tile: the 16 rows on the wgmma's N side.
// What h11 does the same way (its code is its own):
//  * The wgmma's A operand is 64 rows of B (B is stored as N rows of K: K-major, as wgmma reads A), its B operand
//    MW rows of A (A is M rows of K: K-major too). wgmma m64nMWk16 with MW = 16, 32 or 64, the smallest >= M by
//    the spec's rule, or a narrower one where that fills the wave that a split K would (M = 64, N = 4096: two rows
//    of 32): a tile is 64 columns of C by MW rows, and a stage is 8 KiB of B and MW x 128 bytes of A.
//  * One consumer warpgroup (its accumulators are MW / 2 registers per thread) and many stages: these problems
//    are memory-bound, so the ring keeps STAGES * (8 + MW / 8) KiB in flight per SM.
//  * The accumulator is C^T: thread (warp w, lane l) holds rows n = 16w + l / 4 (+ 8) of the tile's columns of C,
//    for m = 8j + 2 (l % 4) (+ 1); its stores are scalar, and lanes l, l + 4, ... write consecutive n of one row of
//    C (32 contiguous bytes per 8 lanes).
//  * Split-K as h8's: TILES * SPLIT_K CTAs, slice s of a tile waits for its flag to say s (acquire), adds alpha *
//    acc to C (slice 0: alpha * acc + beta * C) and raises it (release); the last slice resets it. Deterministic.
//    The spec splits only where the tiles fill at most an eighth of a wave (SPLIT_WAVE_PART): the slices' chain
//    cost more than half a wave of idle SMs did on the H200.
// Defaults: MW = 16, 16 stages (160 KiB).
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

#include "hopper.cuh"

#ifndef MW
#define MW 16
#endif
#ifndef STAGES
#define STAGES 16
#endif
// The build for one shape (the spec's `specialize`) sets the tile's rows, the smallest wgmma N >= M, and the ring's
// depth that fits beside them.
#ifdef H11_MW
#undef MW
#define MW H11_MW
#endif
#ifdef H11_STAGES
#undef STAGES
#define STAGES H11_STAGES
#endif
#define BK 64
#define TN 64  // columns of C per tile: the wgmma's M, rows of B

#define WGMMA wgmma_m64<MW>

static_assert(MW == 16 || MW == 32 || MW == 64, "MW (rows of C per tile) is the wgmma's N: 16, 32 or 64");

namespace h11 {
constexpr unsigned SPLIT_FLAGS = 4096;  // the spec's SPLIT_FLAGS
__device__ unsigned tile_flags[SPLIT_FLAGS];  // zero at module load; every split launch leaves them zero
}  // namespace h11

extern "C" __global__ void __launch_bounds__(256, 1)
hgemm_skinny_swap_ab(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                     float beta, float* __restrict__ C, const __grid_constant__ CUtensorMap tmap_a,
                     const __grid_constant__ CUtensorMap tmap_b)
{
    constexpr uint32_t B_BYTES = TN * BK * 2;  // the wgmma's A operand: 64 rows of B
    constexpr uint32_t A_BYTES = MW * BK * 2;  // its B operand: MW rows of A

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const uint32_t smem_b = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_a = smem_b + STAGES * B_BYTES;  // MW x 128 bytes per stage: 1024-byte aligned for MW >= 8

    const int tiles_m = (M + MW - 1) / MW;
    const int tiles_n = (N + TN - 1) / TN;
    const int tiles = tiles_m * tiles_n;
    const int KT = (K + BK - 1) / BK;
    // one unit per CTA: tile blockIdx.x (tile rows of MW fastest), slice blockIdx.z of gridDim.z
    const int S = gridDim.z;
    const int slice = blockIdx.z;
    const int tile = blockIdx.x;
    if (gridDim.x != (unsigned)tiles || (S > 1 && tiles > (int)h11::SPLIT_FLAGS))
        __trap();  // one CTA per tile and slice, one flag per tile: refuse, never race or hang
    const int tm = tile % tiles_m;
    const int tn = tile / tiles_m;
    const int k_begin = (int)((long long)slice * KT / S);
    const int k_end = (int)((long long)(slice + 1) * KT / S);
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer: 64 rows of B and MW rows of A per k-tile ----
        if (wg_tid == 0) {
            int it = 0;
            for (int kt = k_begin; kt < k_end; ++kt, ++it) {
                const int s = it % STAGES;
                mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(smem_u32(&full[s]), A_BYTES + B_BYTES);
                tma_load_2d(smem_b + s * B_BYTES, &tmap_b, smem_u32(&full[s]), kt * BK, tn * TN);
                tma_load_2d(smem_a + s * A_BYTES, &tmap_a, smem_u32(&full[s]), kt * BK, tm * MW);
            }
        }
        return;
    }
    // ---- the consumer warpgroup: D (64 x MW) = B-slice (64 x K) x A-slice^T (K x MW), i.e. C^T ----
    float d[MW / 2];
#pragma unroll
    for (int i = 0; i < MW / 2; ++i)
        d[i] = 0.0f;
    fence_regs(d);  // the zeros stay before the wgmmas (else ptxas serializes them: C7515)
    const StageDescs<B_BYTES, A_BYTES> descs(smem_b, smem_a);  // the wgmma's A is 64 rows of B (C^T); made once
    int it = 0;
    for (int kt = k_begin; kt < k_end; ++kt, ++it) {
        const int s = it % STAGES;
        wgmma_ktile<MW, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
        if (kt > k_begin && wg_tid == 0)
            mbar_arrive(smem_u32(&empty[(it - 1) % STAGES]));
    }
    wgmma_wait<0>();
    fence_regs(d);

    const int warp = wg_tid >> 5;
    const int lane = wg_tid & 31;
    const int n_base = tn * TN + 16 * warp + (lane >> 2);
    const int m_base = tm * MW + 2 * (lane & 3);
    unsigned* flag = &h11::tile_flags[tile];
    if (S > 1)
        split_k_wait_turn<128>(flag, slice, wg_tid == 0);  // h8's serial reduction (hopper.cuh)
    const float b_eff = (S > 1 && slice > 0) ? 1.0f : beta;  // slice 0 scales the old C; the others add to it
#pragma unroll
    for (int j = 0; j < MW / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int n = n_base + 8 * h;
                const int m = m_base + 8 * j + e;
                if (m < M && n < N) {
                    float* p = C + (size_t)m * N + n;
                    float v = alpha * d[4 * j + 2 * h + e];
                    if (b_eff != 0.0f)
                        v += b_eff * *p;
                    *p = v;
                }
            }
    if (S > 1)
        split_k_pass_turn<128>(flag, slice, S, wg_tid == 0);
}
