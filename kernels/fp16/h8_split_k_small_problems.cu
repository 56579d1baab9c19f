// h8: split-K for small and skinny problems, on h6's persistent warp-specialized kernel.
// Credit: split-K with a serial, deterministic reduction, as NVIDIA CUTLASS's serial split-K (rung 16's, on h6);
//   our implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32. M, N any size (TMA zero-fills the
// boxes past the edges, stores are predicated); K a multiple of 8 (TMA's rows must be multiples of 16 bytes).
//
// h6's 128 x 256 tiles leave most of the H100 idle on small problems: 1024^3 is 32 tiles for 132 SMs, and
// M = 16 or 128 with N = K = 4096 is 16 tiles. What h8 changes:
//  * The tile is a parameter: BM = 64 * CONSUMERS (one or two consumer warpgroups; a 64-row tile wastes less of
//    each wgmma's M = 64 when M <= 64), BN = 32 to 256 in steps of 8 (the wgmma N). More, smaller tiles fill more SMs:
//    the spec picks 128 x 64 (two consumer warpgroups) by default and 64 x 64 (one) for M <= 256 (H8_CONSUMERS,
//    H8_BN, below). On the H100 128 x 64 ran 1024^3 at 176.6-177.8 TFLOP/s against 167.8 for 64 x 128, and
//    64 x 64 ran M = 16 and 128 (N = K = 4096) 17% and 11% faster than 128 x 64 (benchmarks/2026-11-25_h100_pingpong).
//  * Work units are (tile, slice): slice s of a tile computes k-tiles [s * KT / S, (s + 1) * KT / S) of
//    KT = cdiv(K, BK). The spec's `decomposition` picks S (SPLIT_K) at each shape: S > 1 only when the tiles
//    leave part of one wave of CTAs idle (the run's note shows TILES and SPLIT_K).
//  * S == 1: h6 itself, a persistent grid of min(SMs, tiles) CTAs walking the tiles in grouped order, the
//    producer running ahead across tiles.
//  * S > 1: the launch has exactly TILES * S CTAs, gridDim = (TILES, 1, S), one work unit each (tile blockIdx.x,
//    slice blockIdx.z). The reduction is serial and deterministic, in C, as rung 16's (CUTLASS's serial split-K):
//    slice 0 stores alpha * acc + beta * C (C unread when beta == 0); slice s > 0 waits until its tile's flag
//    says s (ld.acquire.gpu), adds alpha * acc to C and raises the flag to s + 1 (st.release.gpu after a barrier
//    and a fence, so every consumer thread's stores are visible first); the last slice sets it back to 0 for the
//    next launch. Additions happen in slice order: the same inputs give the same bits every launch.
//  * No deadlock: a slice waits only on the slice before it of its tile, a CTA of lower linear index (z is the
//    slowest dimension), which the GPU dispatches first and which itself waits only on lower ones. A split launch
//    is never persistent (one unit per CTA), so no CTA waits on a unit queued behind a waiting CTA, and the
//    spec's rule keeps it to one wave anyway.
//  * Unsplit launches write C as h12 does (hopper.cuh, store_acc_tma): through two 8 KiB staging buffers per
//    consumer warpgroup and TMA stores, where C's rows are on 16 bytes (N % 4 == 0) and beta == 0 (C unread); the
//    others, and every slice of a split launch, take h6's epilogue: rows of C off the 32-byte grid (N % 8 != 0)
//    staged through the same shared memory (hopper.cuh, store_acc_rows). EPI_DIRECT = 1 (below; plan rule 3's)
//    writes every launch's C from the registers instead, with no staging buffers.
//  * Clusters of two along N (the spec's rule pairs unsplit CTAs where the rows of A and B are off 128-byte lines;
//    CLUSTER_N = 2 pairs every launch, split ones too): the pair computes tiles (tm, 2q) and (tm, 2q + 1) (of the
//    same slice), which read the same box of A per k-tile; each CTA loads half of it (BM / 2 rows) by TMA
//    multicast into both and its own B box, so A leaves L2 once per pair (16 instead of 24 KiB per k-tile per CTA
//    at 128 x 64), as cuBLAS's kernels at 1000^3-1024^3, and its split-K kernels at 128 rows, run in pairs. A stage
//    is refilled when the consumers of both CTAs have released it (h7's scheme: `empty` counts both, each consumer
//    also arrives on its peer's). A split launch in pairs has CN * cluster tiles * S CTAs, one flag per CTA's tile;
//    a slice still waits only on CTAs of lower linear index (a lower z), dispatched first, cluster by cluster.
//  * Clusters of two or four along M too (CLUSTER_M = 2 or 4, CM x CN CTAs): the CTAs of a cluster column compute
//    tiles (CM p + i, tn), which read the same box of B; each loads a piece of it (B_PIECE rows, whole 8-row swizzle
//    atoms) by multicast into its column, as each CTA of a cluster row loads its part of A into its row. Per k-tile
//    at 128 x 64 a CTA in 2 x 2 reads 12 KiB from L2 instead of 16 in pairs and 24 alone. At 128 x 72 in 4 x 2 (the
//    decomposition cuBLAS runs at 1000^3: 2 x 4 clusters of 72 x 128 tiles, in its column-major terms) B's 72 rows
//    are three pieces of 24 and the fourth CTA of the column loads none; in 2 x 2 they are pieces of 40 (5 atoms),
//    the second at rows 32-71, eight rows written twice with the same bytes. A CTA's stage is written by its row (A)
//    and its column (B), so `empty` counts the consumers of both, CM + CN - 1 CTAs, and each consumer releases a
//    stage in its own CTA, its row and its column.
// Limits: a split launch has at most SPLIT_FLAGS tiles, its pairs' tiles past N counted (the spec never asks for
// more; the kernel traps rather than race); one split launch at a time per module (the flags are the module's).
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

#include "hopper.cuh"

#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef BN
#define BN 64
#endif
// A build for one shape (the spec's `specialize`) sets the tile that shape's launch uses: H8_CONSUMERS consumer
// warpgroups (64 rows each) by H8_BN columns. Skinny problems (M <= 256) get one warpgroup, 64 x 64, so that more
// tiles across N fill the SMs before K has to be split and no rows of a 128-row tile go to waste; the others get
// CONSUMERS by BN (128 x 64: two warpgroups issue wgmmas where the tiles are few).
#ifdef H8_BN
#undef BN
#define BN H8_BN
#endif
#ifdef H8_CONSUMERS
#undef CONSUMERS
#define CONSUMERS H8_CONSUMERS
#endif
// ... and whether it splits K (H8_SPLIT = 0: the serial reduction is compiled out; such a build refuses a split
// launch). Less code matters at these sizes: at 1024^3 a third of h8's stall samples were instruction fetches.
#ifndef H8_SPLIT
#define H8_SPLIT 1
#endif
// ... and whether its CTAs run in clusters of two along N that share the A box (H8_CLUSTER_N = 2), and of two along
// M that share the B box (H8_CLUSTER_M = 2): CM x CN CTAs, rank r at cluster row r / CN, column r % CN.
#ifndef H8_CLUSTER_N
#define H8_CLUSTER_N 1
#endif
#ifndef H8_CLUSTER_M
#define H8_CLUSTER_M 1
#endif
#define CN H8_CLUSTER_N
#define CM H8_CLUSTER_M
#define CL (CM * CN)
#ifndef BK
#define BK 64
#endif
#ifndef STAGES
#define STAGES 8
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#define BM (64 * CONSUMERS)
#define CONSUMER_THREADS (128 * CONSUMERS)
// EPI_DIRECT = 1: every epilogue writes C straight from the registers (hopper.cuh, store_acc; rows on 32-byte
// sectors where N % 8 == 0), with no staging buffers after the stages (the spec's EPILOGUE_SMEM is 0 then). At
// 1000^3 a CTA's one tile ends the kernel: the stores need no round trip through shared memory, no warpgroup
// barriers and no wait for the TMA stores to land, and rule 3's 128 x 80 in 2 x 2 ran 1.4-1.5 points closer to
// cuBLAS (fp16 and bf16) and 1000 x 1000 x 2000 1.4 (benchmarks/2026-11-29_h200_direct44).
#ifndef EPI_DIRECT
#define EPI_DIRECT 0
#endif

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups: BM = 64 or 128");
static_assert((CN == 1 || CN == 2) && (CM == 1 || CM == 2 || CM == 4),
              "CTAs alone or in clusters of two along N and two or four along M");
// the rows of B's box each CTA of a cluster column loads: whole 8-row swizzle atoms. Where the pieces do not make
// up the box (128 x 72 in 2 x 2: 9 atoms, pieces of 5) the last one ends at the box's end, over the rows of the one
// before it: those rows arrive twice, the same bytes, and `full` expects every piece's bytes (B_LOADED)
#define B_PIECE (8 * ((BN / 8 + CM - 1) / CM))
#define B_PIECES ((BN + B_PIECE - 1) / B_PIECE)  // the CTAs of a column that load one; the rest none
static_assert(BN % 8 == 0 && BN >= 32 && BN <= 256,
              "BN is the wgmma N, 32 to 256 in steps of 8, B's box in pieces of whole 1024-byte swizzle rows");

namespace h8 {

constexpr unsigned SPLIT_FLAGS = 4096;  // the spec's SPLIT_FLAGS
constexpr uint32_t EPI_BYTES = 2 * TMA_EPI_BUF_BYTES;  // per consumer warpgroup: the spec's 16384 * TC
static_assert(EPI_BYTES >= EPI_WARPGROUP_BYTES, "the staging buffers double as store_acc_rows' slices");
__device__ unsigned tile_flags[SPLIT_FLAGS];  // zero at module load; every split launch leaves them zero

}  // namespace h8

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_split_k_small_problems(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                             const elem_t* __restrict__ B, float beta, float* __restrict__ C,
                             const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                             const __grid_constant__ CUtensorMap tmap_c)
{
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;
    constexpr uint32_t B_LOADED = B_PIECES * B_PIECE * BK * 2;  // B_BYTES, or more where pieces overlap

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;
    // after the stages (at a multiple of 1024 bytes, as the staging buffers' swizzle needs): each consumer
    // warpgroup's h8::EPI_BYTES for its epilogue, two staging buffers of TMA stores (unsplit launches) or the slices
    // of rows off the 32-byte grid (hopper.cuh)
    const uint32_t smem_epi = smem_b + STAGES * B_BYTES;

    const int tiles_m = (M + BM - 1) / BM;
    const int tiles_n = (N + BN - 1) / BN;
    const int KT = (K + BK - 1) / BK;
    // Work units: unit u is slice u / tiles of tile u % tiles. This CTA (or cluster) takes units cta, cta + ctas,
    // ...: with S == 1 the persistent walk of h6; with S > 1 exactly one unit (one CTA per tile and slice).
    // In clusters (CL = CM x CN CTAs) the units are cluster tiles of CM BM x CN BN (and a slice), walked by
    // clusters as h7's, the CTA at cluster row rm and column rn computing tile (CM ctm + rm, CN ctn + rn) (past M or
    // N at an odd count of tile rows or columns: it loads zeros for its peers' sake and stores nothing); a split
    // launch then has CL * ctiles_m * ctiles_n CTAs along x.
    const int S = gridDim.z;
    const int ctiles_m = (tiles_m + CM - 1) / CM;
    const int ctiles_n = (tiles_n + CN - 1) / CN;
    const int ctas = gridDim.x * gridDim.z / CL;
    const int cta = (blockIdx.z * gridDim.x + blockIdx.x) / CL;
    const int units = ctiles_m * ctiles_n * S;
    const uint32_t rank = CL > 1 ? cluster_ctarank() : 0;
    // without clusters along M the rank is the column itself (so the pairs' masks stay compile-time constants)
    const int rm = CM > 1 ? (int)rank / CN : 0, rn = CM > 1 ? (int)rank % CN : (int)rank;
    if (S > 1 && (!H8_SPLIT || gridDim.x != (unsigned)(CL * ctiles_m * ctiles_n) ||
                  CL * ctiles_m * ctiles_n > (int)h8::SPLIT_FLAGS))
        __trap();  // a split launch must be one unit per CTA, one flag per tile, from a build that splits
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;
    // unsplit launches write C by TMA stores where its rows are on 16 bytes and C is not read (h12's epilogue)
    const bool by_tma = !EPI_DIRECT && S == 1 && beta == 0.0f && (N & 3) == 0 &&
                        (reinterpret_cast<uintptr_t>(C) & 15) == 0;

    if (threadIdx.x == 0) {
        tma_prefetch_map(&tmap_a);  // the descriptors on their way while the barriers are set up
        tma_prefetch_map(&tmap_b);
        if (by_tma)
            tma_prefetch_map(&tmap_c);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);  // this CTA's producer; bytes from its row and column in a cluster
            mbar_init(smem_u32(&empty[s]), CONSUMERS * (CM + CN - 1));  // the consumers of its row and column
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    barriers_set_up<(CL > 1)>();
    // unit u's tile: (tm, tn) and its slice; in a cluster, this CTA's tile of cluster tile u
    auto unit_tile = [&](int u, int& slice, int& tile, int& tm, int& tn) {
        slice = u / (ctiles_m * ctiles_n);
        tile = u % (ctiles_m * ctiles_n);
        tile_coords(tile, ctiles_m, ctiles_n, (GROUP_M + CM - 1) / CM, tm, tn);
        tm = tm * CM + rm;
        tn = tn * CN + rn;
    };
    // the CTAs that write into this CTA's stages and read from them: its cluster row (A), its column (B)
    const uint16_t row_mask = (uint16_t)(((1u << CN) - 1) << (rm * CN));
    // (bits rn, CN + rn, 2 CN + rn, ...: one per cluster row; written out per CM, which keeps the measured builds'
    // SASS: a general formula moved ptxas's schedule of the 2 x 1 and 2 x 2 builds)
    const uint16_t col_mask = (uint16_t)(CM == 4   ? (CN == 2 ? 0x55u : 0xFu) << rn
                                         : CM == 2 ? (1u << rn) | (1u << (CN + rn))
                                                   : 1u << rn);

    if (wg == 0) {
        // ---- producer: runs ahead across work units, as h6 across tiles ----
#if CONSUMERS == 2
        setmaxnreg_dec<40>();
#endif
        if (wg_tid == 0) {
            int it = 0;  // k-tiles issued so far by this CTA, over all its units
            for (int u = cta; u < units; u += ctas) {
                int slice, tile, tm, tn;
                unit_tile(u, slice, tile, tm, tn);
                const int k_end = (int)((long long)(slice + 1) * KT / S);
                for (int kt = (int)((long long)slice * KT / S); kt < k_end; ++kt, ++it) {
                    const int s = it % STAGES;
                    const uint32_t bar = smem_u32(&full[s]);
                    mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    mbar_arrive_expect_tx(bar, A_BYTES + B_LOADED);
                    if (CN > 1)  // the cluster row shares tile row tm: this CTA's BM / 2 rows of it, to the row
                        tma_load_2d_multicast(smem_a + s * A_BYTES + rn * (A_BYTES / 2), &tmap_a, bar, kt * BK,
                                              tm * BM + rn * (BM / 2), row_mask);
                    else
                        tma_load_2d(smem_a + s * A_BYTES, &tmap_a, bar, kt * BK, tm * BM);
                    if (CM > 1) {  // the cluster column shares tile column tn: this CTA's piece of B's box
                        if (CM * B_PIECE == BN || rm * B_PIECE < BN) {  // none where the pieces before cover the box
                            // rm * B_PIECE where the pieces make up the box (the builds measured before the
                            // overlap: a min there moves ptxas's schedule), else the last piece ends at BN
                            const int row = BN % B_PIECE == 0 ? rm * B_PIECE : min(rm * B_PIECE, BN - B_PIECE);
                            tma_load_2d_multicast(smem_b + s * B_BYTES + row * 128, &tmap_b, bar, kt * BK,
                                                  tn * BN + row, col_mask);
                        }
                    } else
                        tma_load_2d(smem_b + s * B_BYTES, &tmap_b, bar, kt * BK, tn * BN);
                }
            }
            if (CL > 1)  // no CTA leaves while its peers may still multicast into it or arrive on its barriers
                producer_tail<STAGES>(empty, it);
        }
    } else {
        // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of every tile ----
#if CONSUMERS == 2
        setmaxnreg_inc<232>();  // one consumer has the register file to itself at 256 threads: no reallocation
#endif
        const int c = wg - 1;
        const uint32_t bufs = smem_epi + c * h8::EPI_BYTES;
        float* const scratch = reinterpret_cast<float*>(smem_raw + (bufs - smem_u32(smem_raw)));
        int stores = 0;
        auto release = [&](int s) {  // stage s is free: here, and in a cluster in its row and column too
            mbar_arrive(smem_u32(&empty[s]));
            if (CN > 1)
                mbar_arrive_cluster(smem_u32(&empty[s]), rank ^ 1);
            for (int i = 1; i < CM; ++i)  // the other CTAs of its column (cluster rows rm ^ i)
                mbar_arrive_cluster(smem_u32(&empty[s]), rank ^ (CN * i));
        };
        // the wgmma descriptors of stage 0, made once: stage s and k16 step kk are additions to them (hopper.cuh,
        // StageDescs); at 1024^3 the k-tile's four wgmmas issue in 17 instructions instead of 32, and h8 ran
        // 92.5-95.2% of cuBLAS against 89.0-91.0% (benchmarks/2026-11-29_h200_cublas_decompositions, section 9)
        const StageDescs<A_BYTES, B_BYTES> descs(smem_a + c * 64 * 128, smem_b);
        int it = 0;
        for (int u = cta; u < units; u += ctas) {
            int slice, tile, tm, tn;
            unit_tile(u, slice, tile, tm, tn);
            const int k_begin = (int)((long long)slice * KT / S);
            const int k_end = (int)((long long)(slice + 1) * KT / S);
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
            for (int kt = k_begin; kt < k_end; ++kt, ++it) {
                const int s = it % STAGES;
                wgmma_ktile<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
                if (kt > k_begin && wg_tid == 0)
                    release((it - 1) % STAGES);
            }
            wgmma_wait<0>();
            fence_regs(d);
            // the unit's last stage is free: the producer refills it while we store (none if the unit had no k-tile)
            if (k_end > k_begin && wg_tid == 0)
                release((it - 1) % STAGES);
            if ((CN > 1 && tn * BN >= N) || (CM > 1 && tm * BM >= M))  // a tile of the cluster past N or M
                continue;
            if (by_tma) {
                store_acc_tma<BN, 2>(d, alpha, &tmap_c, tm * BM + 64 * c, tn * BN, wg_tid, bufs, 2 + c, stores);
                continue;
            }
            if (S == 1 || !H8_SPLIT) {
#if EPI_DIRECT
                store_acc<BN>(d, M, N, alpha, beta, C, tm * BM + 64 * c, tn * BN, wg_tid);
#else
                store_acc_rows<BN>(d, M, N, alpha, beta, C, tm * BM + 64 * c, tn * BN, wg_tid, scratch);
#endif
                continue;
            }
            // The serial reduction (hopper.cuh): wait for the slices before this one, add this slice's part (slice 0
            // scales the old C, unread when beta == 0), hand the tile on.
            unsigned* flag = &h8::tile_flags[tile * CL + (int)rank];  // this CTA's tile of the cluster tile
            const bool leader = threadIdx.x == 128;  // thread 0 of the first consumer warpgroup
            split_k_wait_turn<CONSUMER_THREADS>(flag, slice, leader);
#if EPI_DIRECT
            store_acc<BN>(d, M, N, alpha, slice == 0 ? beta : 1.0f, C, tm * BM + 64 * c, tn * BN, wg_tid);
#else
            store_acc_rows<BN>(d, M, N, alpha, slice == 0 ? beta : 1.0f, C, tm * BM + 64 * c, tn * BN, wg_tid,
                               scratch);
#endif
            split_k_pass_turn<CONSUMER_THREADS>(flag, slice, S, leader);
        }
        if (by_tma && wg_tid == 0)
            bulk_wait<0>();  // the last stores have written C (and read their buffers) before the CTA exits
    }
}
