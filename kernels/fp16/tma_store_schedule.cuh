// The schedule h12 and h14 share (h14 is h12 on fp8 operands): 2 x 1 clusters sharing B, tile rows grouped GROUP_M at
// a time, the ring's barriers, its producer, and EPI_BUFS staging buffers per consumer warpgroup for the TMA-store
// epilogue. Included after the rung's parameters (BM, BN, BK, STAGES, CONSUMERS, CLUSTER_M, GROUP_M, EPI_BUFS) are
// defined; hopper.cuh before it. Only the element size differs between the two rungs: A_BYTES and B_BYTES, a stage's.
#pragma once

static_assert(CLUSTER_M == 1 || BN % 16 == 0,
              "in pairs each CTA loads BN / 2 rows of B: whole 1024-byte swizzle atoms (8 rows)");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 x 1 (h6's loads) or 2 x 1 CTAs (B shared)");
static_assert(GROUP_M % CLUSTER_M == 0, "GROUP_M counts tile rows: whole cluster rows");
static_assert(EPI_BUFS == 2 || EPI_BUFS == 4, "two or four staging buffers per consumer warpgroup");

namespace tma_store {
constexpr uint32_t EPI_BYTES = EPI_BUFS * TMA_EPI_BUF_BYTES;  // EPI_BUFS staging buffers per consumer warpgroup
static_assert(EPI_BYTES >= EPI_WARPGROUP_BYTES, "the buffers double as store_acc_rows' slices");
}  // namespace tma_store

// This CTA's tile in cluster tile `ctile` (hopper.cuh, cluster_tile_coords; GROUP_M counts tile rows).
__device__ __forceinline__ void cta_tile(int ctile, int ctiles_m, int ctiles_n, uint32_t rank, int& tm, int& tn)
{
    cluster_tile_coords<CLUSTER_M, 1>(ctile, ctiles_m, ctiles_n, GROUP_M / CLUSTER_M, rank, tm, tn);
}

// Thread 0: the tensor maps on their way while the barriers are set up (full: this CTA's producer, bytes from both
// CTAs of a pair; empty: the consumers of every CTA of the cluster). `tmap_c`: null where C is not stored by TMA.
__device__ __forceinline__ void ring_init(uint64_t* full, uint64_t* empty, const CUtensorMap* tmap_a,
                                          const CUtensorMap* tmap_b, const CUtensorMap* tmap_c)
{
    tma_prefetch_map(tmap_a);
    tma_prefetch_map(tmap_b);
    if (tmap_c)
        tma_prefetch_map(tmap_c);
    for (int s = 0; s < STAGES; ++s) {
        mbar_init(smem_u32(&full[s]), 1);
        mbar_init(smem_u32(&empty[s]), CONSUMERS * CLUSTER_M);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// The producer (one thread): every k-tile of every tile this cluster takes, running ahead across tile boundaries (h7's).
// In pairs the two CTAs share tile column tn: each loads its BN / 2 rows of B to both, and none leaves while its peer
// may still multicast into it or arrive on its barriers.
template <uint32_t A_BYTES, uint32_t B_BYTES>
__device__ __forceinline__ void produce(uint64_t* full, uint64_t* empty, uint32_t smem_a, uint32_t smem_b,
                                        const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, int ctiles_m,
                                        int ctiles_n, int cluster_id, int clusters, uint32_t rank, int KT)
{
    constexpr uint16_t EVERY_CTA = (1u << CLUSTER_M) - 1;  // multicast mask: bit i is %cluster_ctarank i
    const int ctiles = ctiles_m * ctiles_n;
    int it = 0;
    for (int ctile = cluster_id; ctile < ctiles; ctile += clusters) {
        int tm, tn;
        cta_tile(ctile, ctiles_m, ctiles_n, rank, tm, tn);
        for (int kt = 0; kt < KT; ++kt, ++it) {
            const int s = it % STAGES;
            const uint32_t bar = smem_u32(&full[s]);
            mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
            tma_load_2d(smem_a + s * A_BYTES, tmap_a, bar, kt * BK, tm * BM);
            if (CLUSTER_M > 1)
                tma_load_2d_multicast(smem_b + s * B_BYTES + rank * (B_BYTES / 2), tmap_b, bar, kt * BK,
                                      tn * BN + rank * (BN / 2), EVERY_CTA);
            else
                tma_load_2d(smem_b + s * B_BYTES, tmap_b, bar, kt * BK, tn * BN);
        }
    }
    if (CLUSTER_M > 1)
        producer_tail<STAGES>(empty, it);
}
