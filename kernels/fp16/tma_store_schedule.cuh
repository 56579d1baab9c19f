// The schedule h12 and h14 share (h14 is h12 on fp8 operands): 2 x 1 clusters sharing B, tile rows grouped GROUP_M at
// a time, the persistent walk over cluster tiles, the ring (its place, barriers, producer and release), and EPI_BUFS
// staging buffers per consumer warpgroup for the TMA-store epilogue. Included after the rung's parameters (BM, BN,
// BK, STAGES, CONSUMERS, CLUSTER_M, GROUP_M, EPI_BUFS) are defined; hopper.cuh before it. Only the element size
// differs between the two rungs: A_BYTES and B_BYTES, a stage's.
#pragma once

static_assert(BN % 8 == 0, "B's box in whole 1024-byte swizzle atoms (8 rows)");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 x 1 (h6's loads) or 2 x 1 CTAs (B shared)");
static_assert(GROUP_M % CLUSTER_M == 0, "GROUP_M counts tile rows: whole cluster rows");
static_assert(EPI_BUFS == 2 || EPI_BUFS == 4, "two or four staging buffers per consumer warpgroup");

namespace tma_store {
constexpr uint32_t EPI_BYTES = EPI_BUFS * TMA_EPI_BUF_BYTES;  // EPI_BUFS staging buffers per consumer warpgroup
// In pairs each CTA loads a piece of B's BN rows to both: whole atoms, B_PIECE rows from row 0 (rank 0) and from row
// BN - B_PIECE (rank 1). At a width off 16 rows (168: 21 atoms) the pieces overlap by one atom, whose bytes both
// copies write alike (the stage's barrier counts both pieces' bytes); at a multiple of 16 they are its halves.
constexpr int B_PIECE = CLUSTER_M > 1 ? 8 * ((BN + 15) / 16) : BN;
constexpr int B_SECOND = BN - B_PIECE;  // the second piece's first row
static_assert(EPI_BYTES >= EPI_WARPGROUP_BYTES, "the buffers double as store_acc_rows' slices");
}  // namespace tma_store

// The ring's place in dynamic shared memory: STAGES stages of A, then of B, from the first 1024-byte boundary (the
// 128-byte swizzle's atom), then the epilogue's staging buffers (a multiple of 1024 too). Dynamic shared memory
// starts at the same offset in every CTA of the kernel: a stage's offset here is the peer's too (multicast and mapa
// address the peer by this CTA's offsets).
struct Ring {
    uint32_t a, b, epi;
};

template <uint32_t A_BYTES, uint32_t B_BYTES>
__device__ __forceinline__ Ring ring_layout(const uint8_t* smem_raw)
{
    Ring r;
    r.a = (smem_u32(smem_raw) + 1023) & ~1023u;
    r.b = r.a + STAGES * A_BYTES;
    r.epi = r.b + STAGES * B_BYTES;
    return r;
}

// The persistent walk: cluster tiles of (CLUSTER_M * BM) x BN taken by clusters of a 1D grid in clusters of
// (CLUSTER_M, 1, 1), this CTA's rank in its cluster, and KT k-tiles of BK per tile.
struct Walk {
    int ctiles_m, ctiles_n, ctiles, cluster_id, clusters, KT;
    uint32_t rank;
};

__device__ __forceinline__ Walk walk(int M, int N, int K)
{
    Walk w;
    w.ctiles_m = ((M + BM - 1) / BM + CLUSTER_M - 1) / CLUSTER_M;
    w.ctiles_n = (N + BN - 1) / BN;
    w.ctiles = w.ctiles_m * w.ctiles_n;
    w.cluster_id = blockIdx.x / CLUSTER_M;
    w.clusters = gridDim.x / CLUSTER_M;
    w.rank = CLUSTER_M > 1 ? cluster_ctarank() : 0;
    w.KT = (K + BK - 1) / BK;
    return w;
}

// A consumer warpgroup's thread 0: stage s is free for both producers, here and in a pair on the peer's empty[s].
__device__ __forceinline__ void release_stage(uint64_t* empty, int s, uint32_t rank)
{
    mbar_arrive(smem_u32(&empty[s]));
    if (CLUSTER_M > 1)
        mbar_arrive_cluster(smem_u32(&empty[s]), rank ^ 1);
}

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

// The producer (one thread): every k-tile of every tile this cluster takes, running ahead across tile boundaries
// (h7's).
// In pairs the two CTAs share tile column tn: each loads its piece of B (tma_store::B_PIECE rows) to both, and none
// leaves while its peer may still multicast into it or arrive on its barriers.
template <uint32_t A_BYTES, uint32_t B_BYTES>
__device__ __forceinline__ void produce(uint64_t* full, uint64_t* empty, const Ring& ring, const CUtensorMap* tmap_a,
                                        const CUtensorMap* tmap_b, const Walk& w)
{
    constexpr uint16_t EVERY_CTA = (1u << CLUSTER_M) - 1;  // multicast mask: bit i is %cluster_ctarank i
    int it = 0;
    for (int ctile = w.cluster_id; ctile < w.ctiles; ctile += w.clusters) {
        int tm, tn;
        cta_tile(ctile, w.ctiles_m, w.ctiles_n, w.rank, tm, tn);
        for (int kt = 0; kt < w.KT; ++kt, ++it) {
            const int s = it % STAGES;
            const uint32_t bar = smem_u32(&full[s]);
            mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(bar, A_BYTES + (CLUSTER_M > 1 ? 2 * tma_store::B_PIECE * (B_BYTES / BN) : B_BYTES));
            tma_load_2d(ring.a + s * A_BYTES, tmap_a, bar, kt * BK, tm * BM);
            if (CLUSTER_M > 1)
                tma_load_2d_multicast(ring.b + s * B_BYTES + w.rank * (tma_store::B_SECOND * (B_BYTES / BN)), tmap_b,
                                      bar, kt * BK, tn * BN + w.rank * tma_store::B_SECOND, EVERY_CTA);
            else
                tma_load_2d(ring.b + s * B_BYTES, tmap_b, bar, kt * BK, tn * BN);
        }
    }
    if (CLUSTER_M > 1)
        producer_tail<STAGES>(empty, it);
}
