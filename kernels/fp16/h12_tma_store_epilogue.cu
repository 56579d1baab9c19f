// h12: h7 with its epilogue through shared memory and TMA stores, on a grid balanced over its rounds of tiles, with a
// tile width fitted to the SM count.
// Credit: C staged in shared memory and written by TMA stores, as in Pranjal Shankhdhar's "Outperforming cuBLAS on
//   H100: a Worklog" and its kernels (https://github.com/pranjalssh/fast.cu) and CUTLASS's TMA-store epilogue; the
//   balanced grid and the fitted tile width are ours.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32.
//
// What this rung adds over h7 (persistent, 2 x 1 clusters sharing B by multicast, each consumer warpgroup writing
// its 64 x 256 fp32 accumulators straight to C with 64 float2 stores per thread):
//  * The epilogue goes through shared memory. A consumer warpgroup writes 32 columns of its accumulators (64 rows x
//    128 bytes, 8 KiB) into a staging buffer, and one of its threads hands the buffer to the copy engine
//    (`cp.async.bulk.tensor` from shared to global): whole 128-byte rows of C, clipped by the engine at M and N.
//    EPI_BUFS buffers per warpgroup (2: beside 4 stages; 4: beside 3) take turns, so the warpgroup fills one while
//    the engine reads the others; before a buffer is written again its last store must have read it
//    (`cp.async.bulk.wait_group.read EPI_BUFS - 1` by the issuing thread, then the warpgroup's barrier). The
//    tile's last stores are left in flight: the warpgroup starts the next tile's main loop while the engine drains
//    them. cuBLAS's kernel at 4096 does the same (ncu: 16 KiB of staging beside its 4 stages, shared-memory store
//    conflicts); h6/h7's warps write C from registers, their tensor pipe 84-86% busy against cuBLAS's 90.5%.
//  * The staging buffers are written with the 128-byte swizzle the tensor map reads them with (16-byte chunk c of
//    row r at chunk c ^ (r % 8)), so a warp's float2 writes spread over the banks instead of landing 8 rows on the
//    same ones.
//  * The persistent grid is balanced over its rounds: with T cluster tiles and room for G clusters, ceil(T / G)
//    rounds are needed whatever the grid; ceil(T / rounds) clusters run them with every cluster doing the same
//    number of tiles (4096^2: 256 cluster tiles, 4 rounds on 64 clusters instead of 66, the last round full).
//    BALANCED=0 launches h7's grid.
//  * The tile's width fits the SMs (the spec's decomposition TN, BN = 0): where 256-wide tiles leave the last round
//    part-empty, a width of 128-256 in steps of 8 whose tiles fill whole rounds (1024 x 11008 x 4096 on 132 SMs: 43
//    columns of 256 are 2.6 rounds, 66 of 168 exactly 4; cuBLAS's tile there is 168 wide). Such widths run without
//    clusters (pairs split B in 8-row swizzle atoms, so they take multiples of 16 only, and ran slower there);
//    256-wide tiles keep the pairs. A width off 32 columns ends with a store of the tile's last 32 columns, which
//    overlaps the store before it (the same values, written twice by this tile alone).
//  * TMA stores need rows of C on 16 bytes (N % 4 == 0) and beta == 0 (C is not read); otherwise the launch takes
//    h6's epilogue (hopper.cuh, store_acc_rows: rows off the 32-byte grid staged through the same buffers), and the
//    host passes an unused tensor map for C (the spec's `when`).
// Defaults: h7's 128 x 256 x 64 tiles (the width fitted where 256 leaves a round part-empty), 4 stages, GROUP_M =
// 16 tile rows, 2 x 1 clusters at 256 columns; 2 x 2 x 8 KiB of staging.
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

// The helpers it shares with the other Hopper rungs (mbarriers, TMA loads, stores and multicast, cluster barriers,
// wgmma, the direct epilogue, the tile order) are in hopper.cuh; this file holds what h12 adds: its kernel.
#include "hopper.cuh"

#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
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
// A build for one shape (the spec's `specialize`) gets the tile's width and cluster there: H12_BN, BN or with BN = 0
// the width fitted to the shape's rounds of tiles (any multiple of 8 from 128 to 256, of 16 in pairs), and
// H12_CLUSTER_M (with CLUSTER_M = 0: pairs at 256 columns, alone at a fitted width). A build for every shape takes
// 256 columns in pairs.
#ifdef H12_BN
#undef BN
#define BN H12_BN
#elif BN == 0
#undef BN
#define BN 256
#endif
#ifdef H12_CLUSTER_M
#undef CLUSTER_M
#define CLUSTER_M H12_CLUSTER_M
#elif CLUSTER_M == 0
#undef CLUSTER_M
#define CLUSTER_M 2
#endif
#ifndef EPI_BUFS
#define EPI_BUFS 2
#endif
#define CONSUMERS 2
#define BM (64 * CONSUMERS)

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BN % 8 == 0 && BN >= 32 && BN <= 256, "BN is the wgmma N: a multiple of 8, 32 to 256");
#include "tma_store_schedule.cuh"  // pairs sharing B, grouped tile rows, the staging buffers, cta_tile

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_tma_store(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                float beta, float* __restrict__ C, const __grid_constant__ CUtensorMap tmap_a,
                const __grid_constant__ CUtensorMap tmap_b, const __grid_constant__ CUtensorMap tmap_c)
{
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const Ring ring = ring_layout<A_BYTES, B_BYTES>(smem_raw);
    const Walk w = walk(M, N, K);
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;
    // TMA stores take rows on 16 bytes and never read C; otherwise h6's epilogue (the same for every CTA)
    const bool by_tma = beta == 0.0f && (N & 3) == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;

    if (threadIdx.x == 0)
        ring_init(full, empty, &tmap_a, &tmap_b, by_tma ? &tmap_c : nullptr);
    barriers_set_up<(CLUSTER_M > 1)>();

    if (wg == 0) {
        // ---- producer: h7's, running ahead across tile boundaries ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0)
            produce<A_BYTES, B_BYTES>(full, empty, ring, &tmap_a, &tmap_b, w);
    } else {
        // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of every tile ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const uint32_t bufs = ring.epi + c * tma_store::EPI_BYTES;
        const StageDescs<A_BYTES, B_BYTES> descs(ring.a + c * 64 * 128, ring.b);  // stage 0's, made once
        int it = 0;
        int stores = 0;
        for (int ctile = w.cluster_id; ctile < w.ctiles; ctile += w.clusters) {
            int tm, tn;
            cta_tile(ctile, w.ctiles_m, w.ctiles_n, w.rank, tm, tn);
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
            for (int kt = 0; kt < w.KT; ++kt, ++it) {
                const int s = it % STAGES;
                wgmma_ktile<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
                if (kt > 0 && wg_tid == 0)
                    release_stage(empty, (it - 1) % STAGES, w.rank);
            }
            wgmma_wait<0>();
            fence_regs(d);
            if (wg_tid == 0)
                release_stage(empty, (it - 1) % STAGES, w.rank);
            if (tm * BM >= M)  // a cluster's second tile row past M (it loaded zeros for its peer's sake)
                continue;
            if (by_tma)
                store_acc_tma<BN, EPI_BUFS>(d, alpha, &tmap_c, tm * BM + 64 * c, tn * BN, wg_tid, bufs, 2 + c, stores);
            else
                store_acc_rows<BN>(d, M, N, alpha, beta, C, tm * BM + 64 * c, tn * BN, wg_tid,
                                   reinterpret_cast<float*>(smem_raw + (bufs - smem_u32(smem_raw))));
        }
        if (wg_tid == 0)
            bulk_wait<0>();  // the last stores have written C (and read their buffers) before the CTA exits
    }
}
