// h9: two consumer warpgroups that take turns, each with a tile of its own ("ping-pong"): one's MMAs run while
// the other writes its finished tile to C.
// Credit: the "ping-pong" schedule of NVIDIA CUTLASS's sm90 kernels (KernelTmaWarpSpecializedPingpong); our
//   implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32. M, N any size (TMA zero-fills the
// boxes past the edges, stores are predicated); K a multiple of 8 (TMA's rows must be multiples of 16 bytes).
//
// What limits h6 (one 128 x 256 tile per CTA, both consumer warpgroups on it) is the epilogue: when a tile's last
// k-tile is done, both warpgroups write 128 KiB of fp32 C and no wgmma is issued meanwhile. The producer has
// already refilled the ring, but the tensor cores wait. On the H100 that shows as the gap between K = 1024 and
// K = 4096 (h6 at 90% and 96% of cuBLAS at 4096 x 4096 x 1024 and 4096^3: about a tenth of a 1024-deep tile's
// time is its epilogue) and in rows of C off the 32-byte grid, whose staged stores are slower still.
// What h9 changes (CUTLASS calls this schedule "ping-pong"; the code is gemmprof's own):
//  * Each consumer warpgroup owns whole tiles of BM x BN (default 128 x 128: two m64n128 wgmmas per k-step, 128
//    accumulator registers per thread, as many as h6's 64 x 256). A CTA's tiles go to its consumers in turn:
//    local tile j to warpgroup j % 2.
//  * One producer thread fills one ring for both, tile after tile, as in h6; a stage is released by the one
//    consumer that read it (empty barriers count 1).
//  * The consumers' main loops are ordered: warpgroup c starts tile j's main loop only once the other has issued
//    the last wgmma of tile j - 1 (an mbarrier per warpgroup, `turn`). So the tensor cores serve one main loop at
//    a time, and each warpgroup's epilogue overlaps the other's main loop; with equal tiles the two settle into
//    alternation. The order is also what makes the ring's parity waits sound: a warpgroup skips the other's
//    k-tiles, and a parity wait is only safe on a barrier at most one phase away; when tile j's consumer waits on
//    stage s, every earlier use of s has been waited on by tile j - 1's consumer.
//  * The price: a stage holds a 128 x 128 tile's operands (32 KiB for 2 x 128 x 128 x 64 FLOPs) where h6's holds
//    48 KiB for twice the FLOPs, so each FLOP reads a third more from L2; 6 stages instead of 4 keep the same
//    192 KiB in flight. Without clusters that was the limit on the H100 (4096^3: 80% of cuBLAS, L2 bytes 1.6x h6's,
//    memory throughput 83%, the consumers' top stall their waits for full stages). So h9 runs in thread-block
//    clusters as h7 does: CLUSTER_M x CLUSTER_N CTAs computing neighbouring tiles, each loading a slice of the
//    A box its cluster row shares and of the B box its cluster column shares, multicast to those CTAs. The default
//    2 x 1 cluster (B shared) reads 24 KiB per k-tile per CTA, h6's bytes per FLOP. On the H100 at 4096: 2 x 1
//    83.5% of cuBLAS, 1 x 2 81.8%, 1 x 1 75-80%, and 2 x 2 (16 KiB, a third less than h6's) only 50%: the four
//    CTAs' mutual releases cost more than the bytes they save (benchmarks/2026-11-25_h100_pingpong).
//  * A stage is refilled once every CTA it was multicast into has read it: its owner in each CTA releases it
//    there and, remotely, in every peer (empty barriers count CLUSTER), with plain remote arrives (h7: the fenced
//    form cost 30%).
// As in h6, rows of C off the 32-byte grid (N % 8 != 0) go out through each warp's 2.5 KiB slice of shared memory
// after the stages (hopper.cuh, store_acc_rows).
// Defaults: BM = 128, BN = 128, BK = 64, 6 stages (192 KiB, plus 20 KiB of epilogue slices), GROUP_M = 16,
// 2 x 1 clusters.
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

#include "hopper.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 64
#endif
#ifndef STAGES
#define STAGES 6
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
#define CONSUMERS 2
#define MT (BM / 64)
#define CLUSTER (CLUSTER_M * CLUSTER_N)  // m64 wgmmas per k-step: the consumer's tile is MT x 64 rows

#define WGMMA wgmma_m64<BN>

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BM == 64 || BM == 128, "a consumer's tile is one or two m64 wgmma rows: BM = 64 or 128");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is the wgmma N: 64, 128 or 256");
static_assert(BM * BN <= 128 * 128, "a consumer's accumulators (BM * BN / 128 per thread) must fit 128 registers");
static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && (CLUSTER_N == 1 || CLUSTER_N == 2),
              "clusters of 1 or 2 CTAs along M and along N");
static_assert(GROUP_M % CLUSTER_M == 0, "GROUP_M counts tile rows: whole cluster rows");

// This CTA's tile in cluster tile `ctile` (hopper.cuh, cluster_tile_coords; GROUP_M counts tile rows).
__device__ __forceinline__ void cta_tile(int ctile, int ctiles_m, int ctiles_n, uint32_t rank, int& tm, int& tn)
{
    cluster_tile_coords<CLUSTER_M, CLUSTER_N>(ctile, ctiles_m, ctiles_n, GROUP_M / CLUSTER_M, rank, tm, tn);
}

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_pingpong(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
               float beta, float* __restrict__ C, const __grid_constant__ CUtensorMap tmap_a,
               const __grid_constant__ CUtensorMap tmap_b)
{
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;

    // Dynamic shared memory starts at the same offset in every CTA of the kernel, so a stage's offset here is
    // the peers' too: multicast and mapa address them by this CTA's offsets.
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    __shared__ __align__(8) uint64_t turn[CONSUMERS];  // turn[c] completes a phase when c has issued a main loop
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;
    float* const epi_scratch =
        reinterpret_cast<float*>(smem_raw + (smem_b + STAGES * B_BYTES - smem_u32(smem_raw)));

    const int ctiles_m = ((M + BM - 1) / BM + CLUSTER_M - 1) / CLUSTER_M;
    const int ctiles_n = ((N + BN - 1) / BN + CLUSTER_N - 1) / CLUSTER_N;
    const int ctiles = ctiles_m * ctiles_n;
    const int cluster_id = blockIdx.x / CLUSTER;  // a 1D grid in clusters of (CLUSTER, 1, 1)
    const int clusters = gridDim.x / CLUSTER;
    const uint32_t rank = CLUSTER > 1 ? cluster_ctarank() : 0;
    const uint32_t rank_m = rank / CLUSTER_N, rank_n = rank % CLUSTER_N;
    // multicast masks (bit i: %cluster_ctarank i): the CTAs of this cluster row share A, of this column B
    const uint16_t row_mask = (uint16_t)(((1u << CLUSTER_N) - 1) << (rank_m * CLUSTER_N));
    uint16_t col_mask = 0;
    for (int m = 0; m < CLUSTER_M; ++m)
        col_mask |= (uint16_t)(1u << (m * CLUSTER_N + rank_n));
    const int KT = (K + BK - 1) / BK;
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), CLUSTER);  // the stage's owner in every CTA of the cluster
        }
        for (int c = 0; c < CONSUMERS; ++c)
            mbar_init(smem_u32(&turn[c]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    barriers_set_up<(CLUSTER > 1)>();

    if (wg == 0) {
        // ---- producer: one ring, the CTA's tiles in order, whichever consumer owns them ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0) {
            int it = 0;
            for (int ctile = cluster_id; ctile < ctiles; ctile += clusters) {
                int tm, tn;
                cta_tile(ctile, ctiles_m, ctiles_n, rank, tm, tn);
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int s = it % STAGES;
                    const uint32_t bar = smem_u32(&full[s]);
                    mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
                    if (CLUSTER_N > 1)  // this CTA's slice of the A box its cluster row shares
                        tma_load_2d_multicast(smem_a + s * A_BYTES + rank_n * (A_BYTES / CLUSTER_N), &tmap_a, bar,
                                              kt * BK, tm * BM + rank_n * (BM / CLUSTER_N), row_mask);
                    else
                        tma_load_2d(smem_a + s * A_BYTES, &tmap_a, bar, kt * BK, tm * BM);
                    if (CLUSTER_M > 1)  // this CTA's slice of the B box its cluster column shares
                        tma_load_2d_multicast(smem_b + s * B_BYTES + rank_m * (B_BYTES / CLUSTER_M), &tmap_b, bar,
                                              kt * BK, tn * BN + rank_m * (BN / CLUSTER_M), col_mask);
                    else
                        tma_load_2d(smem_b + s * B_BYTES, &tmap_b, bar, kt * BK, tn * BN);
                }
            }
            if (CLUSTER > 1)  // no CTA leaves while a peer may still multicast into it or arrive on its barriers
                producer_tail<STAGES>(empty, it);
        }
    } else {
        // ---- consumer c: the CTA's local tiles c, c + 2, c + 4, ... ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const int other = 1 - c;
        const StageDescs<A_BYTES, B_BYTES> descs(smem_a, smem_b);  // stage 0's, made once
        // a stage this warpgroup read is free: here and in every peer it was multicast into
        auto release = [&](int s) {
            mbar_arrive(smem_u32(&empty[s]));
            for (uint32_t p = 1; p < CLUSTER; ++p)
                mbar_arrive_cluster(smem_u32(&empty[s]), (rank + p) % CLUSTER);
        };
        for (int j = c;; j += CONSUMERS) {
            const int ctile = cluster_id + j * clusters;
            if (ctile >= ctiles)
                break;
            int tm, tn;
            cta_tile(ctile, ctiles_m, ctiles_n, rank, tm, tn);
            float d[MT][BN / 2];
#pragma unroll
            for (int m = 0; m < MT; ++m)
#pragma unroll
                for (int i = 0; i < BN / 2; ++i)
                    d[m][i] = 0.0f;
            // my turn: the other warpgroup has issued tile j - 1's main loop (its ((j - 1) / 2)-th)
            if (j > 0)
                mbar_wait(smem_u32(&turn[other]), ((j - 1) / CONSUMERS) & 1);
            int it = j * KT;  // this tile's first k-tile in the ring's sequence
            for (int kt = 0; kt < KT; ++kt, ++it) {
                const int s = it % STAGES;
                mbar_wait(smem_u32(&full[s]), (it / STAGES) & 1);
                const uint64_t desc_a = descs.a(s), desc_b = descs.b(s);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
                    for (int m = 0; m < MT; ++m)  // 64 rows of 128 bytes further per m, 32 bytes per k16 step
                        WGMMA(d[m], desc_a + m * (64 * 128 >> 4) + 2 * kk, desc_b + 2 * kk);
                wgmma_commit();
                wgmma_wait<1>();
#pragma unroll
                for (int m = 0; m < MT; ++m)
                    fence_regs(d[m]);
                if (kt > 0 && wg_tid == 0)
                    release((it - 1) % STAGES);
            }
            // every wgmma of this tile is issued: the other warpgroup may start its main loop
            if (wg_tid == 0)
                mbar_arrive(smem_u32(&turn[c]));
            wgmma_wait<0>();
#pragma unroll
            for (int m = 0; m < MT; ++m)
                fence_regs(d[m]);
            if (KT > 0 && wg_tid == 0)
                release((it - 1) % STAGES);
            // the epilogue, while the other warpgroup's wgmmas run
#pragma unroll
            for (int m = 0; m < MT; ++m)
                store_acc_rows<BN>(d[m], M, N, alpha, beta, C, tm * BM + 64 * m, tn * BN, wg_tid,
                                   epi_scratch + c * (EPI_WARPGROUP_BYTES / 4));
        }
    }
}
