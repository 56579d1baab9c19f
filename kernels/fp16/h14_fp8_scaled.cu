// h14: h12's kernel on fp8 operands: e4m3 wgmma (m64nNk32) with fp32 accumulation, the operands' scales applied per
// tensor in the epilogue or per block in the main loop, C written as bf16, fp16 or fp32.
// Credit: per-block scales promoted into an fp32 accumulator in registers once per 128 of K, as DeepGEMM's fp8 GEMM
//   for Hopper does (https://github.com/deepseek-ai/DeepGEMM); fp8 wgmma as the PTX ISA describes it; the rest is h12.
//
// C = alpha * (A * scale_a) @ (B * scale_b) + beta * C, A and B e4m3 (bytes), fp32 accumulation, C of H14_C's type.
// Layout: A row-major (M x K), B column-major (N rows of K): both K-major, as wgmma takes fp8 operands. Scales are
// float32 arrays (docs/fp8.md): H14_SCALES = 0, one each; 1 (1x128), A's (K / 128) x M (one per row and 128 of K,
// each 128 of K's M scales contiguous) and B's ceil(N / 128) x (K / 128) (one per 128 x 128 block); 2 (128x128),
// A's (K / 128) x ceil(M / 128).
//
// What this rung takes from h12 (its persistent warp-specialized kernel: a producer warpgroup loading A and B by TMA
// into a ring of stages completing on mbarriers, two consumer warpgroups issuing wgmma on them, 2 x 1 clusters sharing
// B by multicast, a grid balanced over its rounds of tiles, the tile width fitted to the SMs, the epilogue through
// swizzled staging buffers and TMA stores) is unchanged but for the bytes: a 128-byte swizzled row of a tile holds
// 128 fp8 elements, so a k-tile is BK = 128 deep (four k32 wgmmas, each 32 bytes along the row as fp16's k16 steps),
// a stage of 128 x 256 tiles is 48 KiB, and four of them fit beside the staging buffers.
// What it adds:
//  * fp8 wgmma (hopper.cuh, wgmma_m64_e4m3): `wgmma.mma_async.sync.aligned.m64nNk32.f32.e4m3.e4m3`, both operands
//    K-major in shared memory (fp8 has no transposed form); SASS shows QGMMA.
//  * Per-tensor scales (H14_SCALES = 0): the products of the fp8 values accumulate unscaled and the epilogue
//    multiplies by alpha * scale_a * scale_b: one multiply per element, nothing in the main loop.
//  * Block scales (H14_SCALES = 1 or 2), with the promotion DeepGEMM uses (deepseek-ai/DeepGEMM, its fp8 GEMM on
//    Hopper; the technique, written here anew): each k-tile of 128 is one block of K, accumulated by its four wgmmas
//    into a fresh accumulator (scale-d = 0 on the first), then multiplied by scale_a[row, kb] * scale_b[kb, column
//    block] and added into the tile's fp32 accumulator in registers, so the scales never enter the tensor cores and
//    Hopper's fp8 accumulation (about 14 bits kept) spans 128 of K only. Two accumulator sets need 128 registers a
//    thread at 128 columns: block scales take 128-column tiles (one scale block of B wide). A thread's scales of a
//    k-tile are two of A's (its rows r and r + 8) and one of B's, loaded before it waits for the stage.
//  * C in bf16 (default), fp16 or fp32 (H14_C = 2, 1, 0): half C goes out 64 columns per TMA store (one 128-byte row
//    of C per tile row, hopper.cuh, store_acc_tma_half), written to the staging buffers as 4-byte pairs that cover
//    the 32 banks once per write; fp32 C takes h12's 32-column stores. Rows of C off 16 bytes, or beta != 0, take the
//    direct epilogue from registers (store_acc: h6's for fp32, the same for half).
// Credits: DeepGEMM (deepseek-ai/DeepGEMM) for the per-block promotion of fp8 partial sums; h12 (and h4-h11 before
// it) for the rest. No code of DeepGEMM's is copied: its technique is described in its README and the DeepSeek-V3
// technical report (section 3.3.2, "increasing accumulation precision").
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

#include "hopper.cuh"

#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 128
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 2
#endif
#ifndef EPI_BUFS
#define EPI_BUFS 2
#endif
#ifndef H14_C
#define H14_C 2  // 0: fp32 C, 1: fp16, 2: bf16 (the spec's c_dtype_define)
#endif
#ifndef H14_SCALES
#define H14_SCALES 0  // 0: per tensor, 1: A 1x128 and B 128x128, 2: A and B 128x128 (the spec's scales_define)
#endif
// A build for one shape (the spec's `specialize`) gets the tile's width and cluster there, as h12's: H14_BN (block
// scales: 128; per tensor: BN, or with BN = 0 the width fitted to the shape's rounds of tiles) and H14_CLUSTER_M.
#ifdef H14_BN
#undef BN
#define BN H14_BN
#elif BN == 0
#undef BN
#define BN (H14_SCALES ? 128 : 256)
#endif
#ifdef H14_CLUSTER_M
#undef CLUSTER_M
#define CLUSTER_M H14_CLUSTER_M
#elif CLUSTER_M == 0
#undef CLUSTER_M
#define CLUSTER_M 2
#endif
#define CONSUMERS 2
#define BM (64 * CONSUMERS)

#if H14_C == 0
typedef float c_t;
#elif H14_C == 1
typedef __half c_t;
#else
typedef __nv_bfloat16 c_t;
#endif

static_assert(BK == 128, "one 128-byte swizzled row of K per tile row: BK = 128 fp8 elements");
static_assert(BN % 8 == 0 && BN >= 64 && BN <= 256, "BN is the wgmma N: a multiple of 8, 64 to 256");
static_assert(H14_SCALES == 0 || BN == 128, "block scales: 128-column tiles (one scale block of B, two accumulators)");
#include "tma_store_schedule.cuh"  // pairs sharing B, grouped tile rows, the staging buffers, cta_tile

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
fp8_gemm_scaled(int M, int N, int K, float alpha, const uint8_t* __restrict__ A, const uint8_t* __restrict__ B,
                float beta, c_t* __restrict__ C, const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                const __grid_constant__ CUtensorMap tmap_c)
{
    constexpr uint32_t A_BYTES = BM * BK;  // one byte per element
    constexpr uint32_t B_BYTES = BN * BK;

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const Ring ring = ring_layout<A_BYTES, B_BYTES>(smem_raw);
    const Walk w = walk(M, N, K);
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;
    // TMA stores take rows on 16 bytes and never read C; otherwise the direct epilogue (the same for every CTA)
    const bool by_tma =
        beta == 0.0f && ((N * (int)sizeof(c_t)) & 15) == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;

    if (threadIdx.x == 0)
        ring_init(full, empty, &tmap_a, &tmap_b, by_tma ? &tmap_c : nullptr);
    barriers_set_up<(CLUSTER_M > 1)>();

    if (wg == 0) {
        // ---- producer: h12's, with one-byte elements ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0)
            produce<A_BYTES, B_BYTES>(full, empty, ring, &tmap_a, &tmap_b, w);
    } else {
        // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of every tile ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const uint32_t bufs = ring.epi + c * tma_store::EPI_BYTES;
        const StageDescs<A_BYTES, B_BYTES> descs(ring.a + c * 64 * 128, ring.b);  // stage 0's, made once
#if H14_SCALES == 0
        const float out_scale = alpha * __ldg(scale_a) * __ldg(scale_b);  // per tensor: applied once, in the epilogue
#else
        const float out_scale = alpha;
        const int KB = K / BK;  // K % 128 == 0 (the spec's shape constraint): one scale block per k-tile
        const int rows_a = H14_SCALES == 1 ? M : (M + 127) / 128;  // A's scales: KB rows of rows_a
        const int lane_row = 64 * c + (wg_tid >> 5) * 16 + ((wg_tid & 31) >> 2);  // d[4j], d[4j + 1]; +8: d[4j + 2..3]
#endif
        int it = 0;
        int stores = 0;
        for (int ctile = w.cluster_id; ctile < w.ctiles; ctile += w.clusters) {
            int tm, tn;
            cta_tile(ctile, w.ctiles_m, w.ctiles_n, w.rank, tm, tn);
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
#if H14_SCALES == 0
            for (int kt = 0; kt < w.KT; ++kt, ++it) {
                const int s = it % STAGES;
                wgmma_ktile_e4m3<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
                if (kt > 0 && wg_tid == 0)
                    release_stage(empty, (it - 1) % STAGES, w.rank);
            }
            wgmma_wait<0>();
            fence_regs(d);
            if (wg_tid == 0)
                release_stage(empty, (it - 1) % STAGES, w.rank);
#else
            // rows past M (a cluster's tile past the last row) read the last row's scales; they are not stored
            const int r0 = min(tm * BM + lane_row, M - 1) / (H14_SCALES == 1 ? 1 : 128);
            const int r1 = min(tm * BM + lane_row + 8, M - 1) / (H14_SCALES == 1 ? 1 : 128);
            const float* sb_tile = scale_b + (size_t)tn * KB;
            float part[BN / 2];
            for (int kt = 0; kt < w.KT; ++kt, ++it) {
                const int s = it % STAGES;
                const float sb = __ldg(sb_tile + kt);  // in flight while the stage lands
                const float sa0 = __ldg(scale_a + (size_t)kt * rows_a + r0);
                const float sa1 = __ldg(scale_a + (size_t)kt * rows_a + r1);
                const uint64_t desc_a = descs.a(s), desc_b = descs.b(s);
                mbar_wait(smem_u32(&full[s]), (it / STAGES) & 1);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 32; ++kk)  // the block's partial sum, from zero (scale-d = 0 first)
                    wgmma_m64_e4m3<BN>(part, desc_a + 2 * kk, desc_b + 2 * kk, kk > 0);
                wgmma_commit();
                wgmma_wait<0>();
                fence_regs(part);
                if (wg_tid == 0)
                    release_stage(empty, s, w.rank);
                const float f0 = sa0 * sb, f1 = sa1 * sb;
#pragma unroll
                for (int j = 0; j < BN / 8; ++j) {  // promotion: scaled into the fp32 accumulator
                    d[4 * j] = fmaf(f0, part[4 * j], d[4 * j]);
                    d[4 * j + 1] = fmaf(f0, part[4 * j + 1], d[4 * j + 1]);
                    d[4 * j + 2] = fmaf(f1, part[4 * j + 2], d[4 * j + 2]);
                    d[4 * j + 3] = fmaf(f1, part[4 * j + 3], d[4 * j + 3]);
                }
            }
#endif
            if (tm * BM >= M)  // a cluster's second tile row past M (it loaded zeros for its peer's sake)
                continue;
            const int row0 = tm * BM + 64 * c, col0 = tn * BN;
#if H14_C == 0
            if (by_tma)
                store_acc_tma<BN, EPI_BUFS>(d, out_scale, &tmap_c, row0, col0, wg_tid, bufs, 2 + c, stores);
            else
                store_acc_rows<BN>(d, M, N, out_scale, beta, C, row0, col0, wg_tid,
                                   reinterpret_cast<float*>(smem_raw + (bufs - smem_u32(smem_raw))));
#else
            if (by_tma)
                store_acc_tma_half<BN, EPI_BUFS, c_t>(d, out_scale, &tmap_c, row0, col0, wg_tid, bufs, 2 + c, stores);
            else
                store_acc<BN, c_t>(d, M, N, out_scale, beta, C, row0, col0, wg_tid);
#endif
        }
        if (wg_tid == 0)
            bulk_wait<0>();
    }
}
