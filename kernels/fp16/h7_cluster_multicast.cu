// h7: h6 in thread-block clusters of two CTAs that share one operand through TMA multicast.
// Credit: clusters sharing a tile by TMA multicast, as in Pranjal Shankhdhar's "Outperforming cuBLAS on H100: a
//   Worklog" and its kernels (https://github.com/pranjalssh/fast.cu) and CUTLASS's TMA multicast; our implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32.
//
// What this rung adds over h6 (persistent, warp-specialized, every CTA loading its own 128 x 64 box of A and
// 256 x 64 box of B: 48 KiB from L2 per k-tile per SM, about 8 TB/s of L2 reads at 700 TFLOP/s, near the
// H100's limit; ncu's top stall for h6 is `barrier`, consumers waiting for their `full` stage):
//  * Launched in clusters of 2 CTAs (cuLaunchKernelEx). With CLUSTER_M = 2 the CTAs of a cluster compute
//    vertically adjacent tiles (tile rows 2p and 2p + 1, one tile column), which read the same box of B per
//    k-tile. Each CTA loads its own A box and half of the B box (BN / 2 rows) with `.multicast::cluster`: the
//    copy engine writes that half into both CTAs' shared memory at the same offset and completes its bytes on
//    both CTAs' `full[s]`. B leaves L2 once per cluster: 32 KiB per k-tile per SM instead of 48.
//    CLUSTER_N = 2 shares A instead, between horizontally adjacent tiles (40 KiB); both 1 is h6.
//  * Both producers write into every stage (each its half of the shared box), so a stage is refilled only when
//    the consumers of both CTAs are done with it: `empty[s]` counts the consumer warpgroups of both CTAs, and
//    each consumer warpgroup releases a stage once in its own CTA and once in its peer's (a remote arrive).
//    `full[s]` still expects a whole A and B box: its own copies and the peer's half.
//  * The remote arrive is a plain one (hopper.cuh, mbar_arrive_cluster): `.release.cluster` puts a
//    MEMBAR.ALL.GPU in front of it, which on every k-tile makes the releasing thread wait until its earlier
//    global stores (the previous tile's C) are visible GPU-wide. An earlier version of this rung (commit
//    6c606c5, benchmarks/hopper_dev) released that way and ran 25-30% slower than h6, this fence being the likely
//    cause; RELEASE_CLUSTER=1 builds that form, to measure it. The plain arrive is enough: what the peer must not
//    overwrite is what this warpgroup's wgmmas read, and wgmma_wait has completed those reads before it.
//  * A cluster barrier after the mbarrier set-up (no copy or arrive reaches a CTA before its barriers exist; .relaxed,
//    as fence.mbarrier_init has released the inits), and no CTA leaves while its peer may still multicast into it
//    or arrive on its barriers: its producer's last waits are for the releases of its last STAGES k-tiles
//    (hopper.cuh, producer_tail), after which none can come. A closing cluster barrier did this before, with a
//    .release arrive whose GPU-wide fence waited for the tile's stores of C (about 1 us at 1024^3).
//  * The persistent schedule walks cluster tiles: cluster c takes cluster tiles c, c + clusters, ... in h6's
//    grouped order, and both of its CTAs walk the same ones (a CTA that stopped early would leave its peer
//    waiting for its half forever). A CTA whose tile lies past M or N (an odd number of tile rows, say) still
//    loads (TMA fills zeros), multicasts and releases; the epilogue's predicates keep it from writing.
//  * h6's epilogue: rows of C off the 32-byte grid (N % 8 != 0) are staged through each consumer warp's slice of
//    shared memory after the stages (hopper.cuh, store_acc_rows; h6 ran N = 4097 at 42% of N = 4096 without it).
// Expected: a few percent over h6 where L2 limits it (4096), less at 8192 where h6 keeps the tensor pipe 94% busy.
// Defaults: h6's 128 x 256 x 64 tiles, 4 stages, GROUP_M = 16 tile rows; 2 x 1 clusters sharing B.
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

// The helpers it shares with the other Hopper rungs (mbarriers, TMA loads and multicast, cluster barriers,
// wgmma, the epilogue, the tile order) are in hopper.cuh; this file holds what h7 adds: its kernel.
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
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#ifndef RELEASE_CLUSTER
#define RELEASE_CLUSTER 0
#endif
#define CONSUMERS 2
#define BM (64 * CONSUMERS)
#define CLUSTER (CLUSTER_M * CLUSTER_N)

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BN == 128 || BN == 256, "BN is the wgmma N: 128 or 256");
static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && (CLUSTER_N == 1 || CLUSTER_N == 2) && CLUSTER <= 2,
              "clusters of 1 x 1, 2 x 1 (B shared) or 1 x 2 (A shared) CTAs");
static_assert(GROUP_M % CLUSTER_M == 0, "GROUP_M counts tile rows: whole cluster rows");

// This CTA's tile in cluster tile `ctile` (hopper.cuh, cluster_tile_coords; GROUP_M counts tile rows).
__device__ __forceinline__ void cta_tile(int ctile, int ctiles_m, int ctiles_n, uint32_t rank, int& tm, int& tn)
{
    cluster_tile_coords<CLUSTER_M, CLUSTER_N>(ctile, ctiles_m, ctiles_n, GROUP_M / CLUSTER_M, rank, tm, tn);
}

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_cluster_multicast(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                        const elem_t* __restrict__ B, float beta, float* __restrict__ C,
                        const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b)
{
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;
    constexpr uint16_t EVERY_CTA = (1u << CLUSTER) - 1;  // multicast mask: bit i is %cluster_ctarank i

    // Dynamic shared memory starts at the same offset in every CTA of the kernel, so a stage's offset here is
    // the peer's too: multicast and mapa address the peer by this CTA's offsets.
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;
    // after the stages: each consumer warpgroup's slice for the epilogue of rows off the 32-byte grid (hopper.cuh)
    float* const epi_scratch =
        reinterpret_cast<float*>(smem_raw + (smem_b + STAGES * B_BYTES - smem_u32(smem_raw)));

    const int ctiles_m = ((M + BM - 1) / BM + CLUSTER_M - 1) / CLUSTER_M;
    const int ctiles_n = ((N + BN - 1) / BN + CLUSTER_N - 1) / CLUSTER_N;
    const int ctiles = ctiles_m * ctiles_n;
    const int cluster_id = blockIdx.x / CLUSTER;  // a 1D grid in clusters of (CLUSTER, 1, 1)
    const int clusters = gridDim.x / CLUSTER;
    const uint32_t rank = CLUSTER > 1 ? cluster_ctarank() : 0;
    const int KT = (K + BK - 1) / BK;
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);                      // this CTA's producer; bytes from both
            mbar_init(smem_u32(&empty[s]), CONSUMERS * CLUSTER);  // the consumers of every CTA of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    barriers_set_up<(CLUSTER > 1)>();

    if (wg == 0) {
        // ---- producer: runs ahead across tile boundaries; loads its A and B, or its half of the shared one ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0) {
            int it = 0;  // k-tiles issued so far by this CTA, over all its tiles (the same count in its peer)
            for (int ctile = cluster_id; ctile < ctiles; ctile += clusters) {
                int tm, tn;
                cta_tile(ctile, ctiles_m, ctiles_n, rank, tm, tn);
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int s = it % STAGES;
                    const uint32_t bar = smem_u32(&full[s]);
                    mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
                    if (CLUSTER_N > 1)  // the pair shares tile row tm: this CTA's BM / 2 rows of it, to both
                        tma_load_2d_multicast(smem_a + s * A_BYTES + rank * (A_BYTES / 2), &tmap_a, bar, kt * BK,
                                              tm * BM + rank * (BM / 2), EVERY_CTA);
                    else
                        tma_load_2d(smem_a + s * A_BYTES, &tmap_a, bar, kt * BK, tm * BM);
                    if (CLUSTER_M > 1)  // the pair shares tile column tn: this CTA's BN / 2 rows of B, to both
                        tma_load_2d_multicast(smem_b + s * B_BYTES + rank * (B_BYTES / 2), &tmap_b, bar, kt * BK,
                                              tn * BN + rank * (BN / 2), EVERY_CTA);
                    else
                        tma_load_2d(smem_b + s * B_BYTES, &tmap_b, bar, kt * BK, tn * BN);
                }
            }
            if (CLUSTER > 1)  // no CTA leaves while its peer may still multicast into it or arrive on its barriers
                producer_tail<STAGES>(empty, it);
        }
    } else {
        // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of every tile ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const StageDescs<A_BYTES, B_BYTES> descs(smem_a + c * 64 * 128, smem_b);  // stage 0's, made once
        // Stage s is free for both producers: one arrive here, one on the peer's empty[s].
        auto release = [&](int s) {
            mbar_arrive(smem_u32(&empty[s]));
            if (CLUSTER > 1)
                mbar_arrive_cluster<RELEASE_CLUSTER != 0>(smem_u32(&empty[s]), rank ^ 1);
        };
        int it = 0;
        for (int ctile = cluster_id; ctile < ctiles; ctile += clusters) {
            int tm, tn;
            cta_tile(ctile, ctiles_m, ctiles_n, rank, tm, tn);
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
            for (int kt = 0; kt < KT; ++kt, ++it) {
                const int s = it % STAGES;
                wgmma_ktile<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
                // the previous k-tile's wgmmas are done: its stage goes back, a k-tile late as in h6
                if (kt > 0 && wg_tid == 0)
                    release((it - 1) % STAGES);
            }
            wgmma_wait<0>();
            fence_regs(d);
            // the tile's last stage is free: the producers refill it while we store
            if (wg_tid == 0)
                release((it - 1) % STAGES);
            store_acc_rows<BN>(d, M, N, alpha, beta, C, tm * BM + 64 * c, tn * BN, wg_tid,
                               epi_scratch + c * (EPI_WARPGROUP_BYTES / 4));
        }
    }
}
