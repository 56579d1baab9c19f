// h13: split-K inside a thread-block cluster, the partial tiles summed through distributed shared memory.
// Credit: distributed shared memory as the CUDA C++ Programming Guide's thread-block-cluster section teaches it;
//   split-K reduced inside a cluster this way is this project's own combination.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32. M, N any size (TMA zero-fills the
// boxes past the edges, stores are clipped or predicated); K a multiple of 8 (TMA's rows must be multiples of 16
// bytes).
//
// Where h8 stands at 1000^3 and 1024^3 (benchmarks/2026-11-25_h100_tma_store): 128 tiles of 128 x 64 fill the SMs,
// but each A row panel is read by 16 CTAs and each B panel by 8, 48 MB of L2 reads for 4 MB of operands, and the
// kernel's time follows its L2 bytes (1000^3: 57.6 MB in 13.0 us, cuBLAS 46.1 MB in 10.1 us; rows of 2,000 bytes
// straddle 128-byte lines). Larger tiles read less (128 x 128: 32 MB) but leave half the SMs idle (64 tiles), and
// h8's split-K through C costs a serial pass over C per slice. h13 takes the larger tile and splits K across the
// CTAs of a cluster instead:
//  * A cluster of KS CTAs (the spec's KS, 2 or 4, along x) computes one BM x BN tile; rank r runs k-tiles
//    [r * KT / KS, (r + 1) * KT / KS) of KT = cdiv(K, BK) with h6's producer / consumer warpgroups (TMA, mbarriers,
//    wgmma). The launch is one tile per cluster, TILES * KS CTAs, not persistent: the spec splits only when the
//    tiles times KS still fit one wave.
//  * The reduction never leaves the SMs: rank r owns columns [r * BN / KS, (r + 1) * BN / KS) of the tile. Each
//    consumer thread sends the accumulators of the other ranks' columns to them, four floats per st.async (distributed
//    shared memory, mapa), and adds what the KS - 1 others sent for its own columns. A column slice of a wgmma
//    accumulator is itself an accumulator of a narrower wgmma (the n8 blocks are consecutive registers), and the sender
//    and the receiver are the same thread of the same warpgroup in their CTAs, so a thread's partials land in its own
//    slot: slot-major, then the thread's float4s, 16 bytes apart across the warpgroup (no bank conflicts on either
//    side). The sums run in rank order: the same inputs give the same bits every launch.
//  * The partials overlay the stages, which hold nothing once the main loops are over. One cluster barrier after the
//    main loop (every CTA's stages are free; .relaxed, as the wgmmas' reads are complete), then the stores, each
//    counting its 16 bytes on the receiver's mbarrier `parts_in` (st.async's complete_tx; the receiver announced (KS -
//    1) slots of bytes when it set the barrier up): a rank waits on its own mbarrier, with no second cluster barrier
//    and no GPU-wide fence (a first version ended the exchange with barrier.cluster.arrive.release, whose
//    MEMBAR.ALL.GPU ncu counted in 8% of the stalls). Then each rank writes its BM x BN / KS of C: by TMA stores
//    (hopper.cuh, store_acc_tma) where C's rows are on 16 bytes and beta == 0, else h6's epilogue (store_acc_rows). A
//    CTA leaves only after every partial for it has arrived, so no peer writes into a CTA that has gone.
// An unsplit launch (KS = 1: the tiles alone fill the SMs) is the same kernel without the exchange.
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

#include "hopper.cuh"

#ifndef CONSUMERS
#define CONSUMERS 2
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
#define GROUP_M 8
#endif
// CTAs per cluster, each a slice of K: the spec's decomposition (KS) at the launch's shape, compiled in (`specialize`)
#ifndef H13_KS
#define H13_KS 2
#endif
#define KS H13_KS
#define BM (64 * CONSUMERS)

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups: BM = 64 or 128");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is the wgmma N: 64, 128 or 256");
static_assert(KS == 1 || KS == 2 || KS == 4, "1, 2 or 4 slices of K per cluster");
static_assert((BN / KS) % TMA_EPI_COLS == 0, "each rank owns whole 32-column stores of the tile");

namespace h13 {

constexpr int OWN = BN / (2 * KS);  // accumulator floats per thread that one rank owns (a wgmma m64n(BN / KS)'s)
constexpr uint32_t A_BYTES = BM * BK * 2;
constexpr uint32_t B_BYTES = BN * BK * 2;
// a rank receives KS - 1 slots, each CONSUMERS x 128 threads x OWN floats
constexpr uint32_t SLOT_BYTES = CONSUMERS * 128 * OWN * 4;
static_assert((KS - 1) * SLOT_BYTES <= STAGES * (A_BYTES + B_BYTES), "the partials fit where the stages were");
// where float4 v of consumer thread (c, t) sits in a receiver's slot `slot`: slot-major, then warpgroup, then float4,
// the warpgroup's 128 threads 16 bytes apart
__device__ __forceinline__ uint32_t part_offset(uint32_t slot, int c, int v, int t)
{
    return ((slot * CONSUMERS + c) * (OWN / 4) + v) * 2048 + t * 16;
}
constexpr uint32_t EPI_BYTES = 2 * TMA_EPI_BUF_BYTES;  // per consumer warpgroup: the spec's 16384 * CONSUMERS
static_assert(EPI_BYTES >= EPI_WARPGROUP_BYTES, "the staging buffers double as store_acc_rows' slices");

}  // namespace h13

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_cluster_split_k(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                      float beta, float* __restrict__ C, const __grid_constant__ CUtensorMap tmap_a,
                      const __grid_constant__ CUtensorMap tmap_b, const __grid_constant__ CUtensorMap tmap_c)
{
    using namespace h13;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    __shared__ __align__(8) uint64_t parts_in;  // completes when the KS - 1 peers' partials have all arrived
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;
    const uint32_t smem_epi = smem_b + STAGES * B_BYTES;  // each consumer warpgroup's EPI_BYTES, 1024-byte aligned
    const uint32_t smem_parts = smem_a;                   // the partials received, over the stages

    const int tiles_m = (M + BM - 1) / BM;
    const int tiles_n = (N + BN - 1) / BN;
    const uint32_t rank = KS > 1 ? cluster_ctarank() : 0;
    if (gridDim.x != (unsigned)(tiles_m * tiles_n * KS))
        __trap();  // one tile per cluster of KS CTAs
    int tm, tn;
    tile_coords(blockIdx.x / KS, tiles_m, tiles_n, GROUP_M, tm, tn);
    const int KT = (K + BK - 1) / BK;
    const int k_begin = (int)((long long)rank * KT / KS);
    const int k_end = (int)((long long)(rank + 1) * KT / KS);
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;
    const bool by_tma = beta == 0.0f && (N & 3) == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;

    if (threadIdx.x == 0) {
        tma_prefetch_map(&tmap_a);
        tma_prefetch_map(&tmap_b);
        if (by_tma)
            tma_prefetch_map(&tmap_c);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), CONSUMERS);
        }
        if (KS > 1) {  // no arrival but this one: the phase completes with the last of the partials' bytes
            mbar_init(smem_u32(&parts_in), 1);
            mbar_arrive_expect_tx(smem_u32(&parts_in), (KS - 1) * SLOT_BYTES);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();  // no peer touches this CTA's shared memory before the cluster barrier after the main loops

    if (wg == 0) {
        // ---- producer: this rank's slice of K ----
#if CONSUMERS == 2
        setmaxnreg_dec<40>();
#endif
        if (wg_tid == 0) {
            for (int kt = k_begin, it = 0; kt < k_end; ++kt, ++it) {
                const int s = it % STAGES;
                const uint32_t bar = smem_u32(&full[s]);
                mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
                tma_load_2d(smem_a + s * A_BYTES, &tmap_a, bar, kt * BK, tm * BM);
                tma_load_2d(smem_b + s * B_BYTES, &tmap_b, bar, kt * BK, tn * BN);
            }
        }
        if (KS > 1)  // every thread of the cluster takes part in its barrier (below)
            cluster_sync_relaxed();
        return;
    }

    // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of the tile ----
#if CONSUMERS == 2
    setmaxnreg_inc<232>();
#endif
    const int c = wg - 1;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i)
        d[i] = 0.0f;
    const StageDescs<A_BYTES, B_BYTES> descs(smem_a + c * 64 * 128, smem_b);  // stage 0's, made once
    for (int kt = k_begin, it = 0; kt < k_end; ++kt, ++it) {
        const int s = it % STAGES;
        wgmma_ktile<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
        if (kt > k_begin && wg_tid == 0)
            mbar_arrive(smem_u32(&empty[(it - 1) % STAGES]));
    }
    wgmma_wait<0>();
    fence_regs(d);
    // ---- the reduction in the cluster (KS > 1) ----
    // every CTA of the cluster is past its main loop (its wgmmas have read their stages: relaxed is enough), so its
    // stages may take the partials; the barrier also makes every CTA's `parts_in` (initialized before the
    // fence.mbarrier_init) visible to its peers
    if (KS > 1)
        cluster_sync_relaxed();
    float own[OWN];  // this rank's columns of the tile (all of them when KS == 1)
#pragma unroll
    for (int q = 0; q < KS; ++q) {  // unrolled: d is indexed by constants only (it stays in registers)
        if (q == (int)rank) {
#pragma unroll
            for (int i = 0; i < OWN; ++i)
                own[i] = d[q * OWN + i];
        } else {
            // in rank q, the senders' slots are in the order q + 1, q + 2, ... (mod KS)
            const uint32_t slot = (rank + KS - q - 1) % KS;
#pragma unroll
            for (int v = 0; v < OWN / 4; ++v)
                st_async_v4(smem_parts + part_offset(slot, c, v, wg_tid), smem_u32(&parts_in), q, d[q * OWN + 4 * v],
                            d[q * OWN + 4 * v + 1], d[q * OWN + 4 * v + 2], d[q * OWN + 4 * v + 3]);
        }
    }
    if (KS > 1)
        mbar_wait(smem_u32(&parts_in), 0);  // every partial has arrived: no peer writes here any more
    const uint8_t* const parts = smem_raw + (smem_parts - smem_u32(smem_raw));
#pragma unroll
    for (int slot = 0; slot < KS - 1; ++slot) {
#pragma unroll
        for (int v = 0; v < OWN / 4; ++v) {
            const float4 p = *reinterpret_cast<const float4*>(parts + part_offset(slot, c, v, wg_tid));
            own[4 * v] += p.x;
            own[4 * v + 1] += p.y;
            own[4 * v + 2] += p.z;
            own[4 * v + 3] += p.w;
        }
    }

    // ---- this rank's BM x BN / KS of C ----
    const uint32_t bufs = smem_epi + c * EPI_BYTES;
    int stores = 0;
    const int col0 = tn * BN + (int)rank * (BN / KS);
    if (by_tma)
        store_acc_tma<BN / KS, 2>(own, alpha, &tmap_c, tm * BM + 64 * c, col0, wg_tid, bufs, 2 + c, stores);
    else
        store_acc_rows<BN / KS>(own, M, N, alpha, beta, C, tm * BM + 64 * c, col0, wg_tid,
                                reinterpret_cast<float*>(smem_raw + (bufs - smem_u32(smem_raw))));
    if (by_tma && wg_tid == 0)
        bulk_wait<0>();  // the stores have read their buffers before the CTA exits
}
