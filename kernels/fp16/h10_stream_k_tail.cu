// h10: h6's persistent kernel with a stream-K tail: the tiles of the last, partial round are shared out by
// k-iterations, so every SM finishes at about the same time.
// Credit: stream-K (Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
//   Multiplication on the GPU", 2023; CUTLASS's stream-K scheduler) for the last round only; our implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32. M, N any size (TMA zero-fills the
// boxes past the edges, stores are predicated); K a multiple of 8 (TMA's rows must be multiples of 16 bytes).
//
// What limits h6 where its tiles do not fill whole rounds: with T tiles on G persistent CTAs the kernel lasts
// ceil(T / G) tile-times, while the work is T / G of them. 1024 x 11008 x 4096 is 344 tiles of 128 x 256: two full
// rounds of 132 and a third with 80 tiles, 61% full, which is h6's whole gap to cuBLAS there on the H100 (86.6%);
// 4096^3 is 512 tiles, 3.88 rounds. What h10 changes:
//  * The first G * floor(T / G) tiles run as in h6 (CTA c takes tiles c, c + G, ...).
//  * The remaining T mod G tiles are cut into their KT k-iterations each, I = (T mod G) * KT in all, and CTA c
//    takes iterations [c * I / G, (c + 1) * I / G) in order, after its whole tiles: a run of pieces of at most a
//    few tiles ("stream-K", Osama et al. 2023; CUTLASS's stream-K scheduler does the same in its own way; the code
//    is gemmprof's own). Each SM's work is then T / G tile-times, give or take one k-iteration.
//  * A tile cut between CTAs is finished by the CTA holding its first k-iteration, which computes that piece last
//    of all its work; every other piece of the tile is the first piece of a later CTA, which writes its fp32
//    accumulators to a slot of its own in a workspace, raises its flag (release), and goes on. The finisher waits
//    for those flags (acquire), adds the pieces in CTA order (the same bits every launch), then applies alpha and
//    beta once and stores C. Nobody waits on a finisher, and a piece's writer never waits before writing it, so
//    no CTA waits for long and none can deadlock: the grid is at most one CTA per SM, all resident.
//  * A CTA writes at most one piece (only its first may start past a tile's k = 0), so the workspace holds one
//    BM x BN fp32 slot per CTA (SK_SLOTS of them, 128 KiB each), written and read in the accumulator's register
//    order, 16 bytes per thread, coalesced. The finisher clears the flags it consumed, so the next launch starts
//    from zeros.
//  * What it costs: the pieces of one tile row or column run at different k at the same moment, so the panels of A
//    and B they share are no longer read once from DRAM for all of them as in a round of whole tiles. On the H100
//    at 4096 x 4096 x 14336 (a tail of 116 of 132 tiles, pieces of ~197 k-iterations) ncu counted 1,601 MB of DRAM
//    reads against h6's 576 and the kernel ran 38% slower; with a tail of half a round (8192^3, 16384 x 4096 x
//    4096: 68 tiles, pieces of 33-66 iterations) it ran 1.4-1.5% faster than h6. So the spec takes the tail only
//    where it is at most SK_TAIL_MAX_PCT % of a round and at least one whole round comes first (small problems are
//    h8's), and builds h6's schedule elsewhere (benchmarks/2026-11-25_h100_stream_k).
//  * STREAM_K=0 builds h6's schedule (every tile whole) at every shape, to measure the tail's worth.
// Defaults: h6's 128 x 256 x 64 tiles, 4 stages, GROUP_M = 16.
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

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
#ifndef STREAM_K
#define STREAM_K 1
#endif
// The build for one shape (the spec's `specialize`) says whether that shape takes the tail: H10_TAIL = 0 runs h6's
// schedule there (the spec's rule: a tail of at most SK_TAIL_MAX_PCT % of a round, after at least one whole round).
#ifdef H10_TAIL
#undef STREAM_K
#define STREAM_K H10_TAIL
#endif
#define CONSUMERS 2
#define BM (64 * CONSUMERS)
#define CONSUMER_THREADS (128 * CONSUMERS)

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BN == 128 || BN == 256, "BN is the wgmma N: 128 or 256");

namespace h10 {

constexpr int SK_SLOTS = 256;  // the spec's SK_SLOTS: the most CTAs a launch may have (one piece each)
constexpr int SLOT_FLOATS = BM * BN;
__device__ unsigned piece_ready[SK_SLOTS];                    // zero at module load; finishers clear what they read
__device__ float4 workspace[SK_SLOTS * SLOT_FLOATS / 4];      // one tile's accumulators per CTA

// The schedule both warpgroups walk: unit u < whole is tile blockIdx.x + u * G; after those, the CTA's pieces of
// the tail, each (tile, k_begin, k_end).
struct Schedule {
    int tiles, KT, G, c, whole, dp_tiles, iters_begin, iters_end;  // iterations: the tail's, this CTA's range

    __device__ Schedule(int tiles_, int KT_)
        : tiles(tiles_), KT(KT_), G((int)gridDim.x), c((int)blockIdx.x)
    {
        const int tail = STREAM_K ? tiles % G : 0;
        dp_tiles = tiles - tail;
        whole = (dp_tiles - c + G - 1) / G;  // this CTA's whole tiles: c, c + G, ... below dp_tiles
        iters_begin = iter_begin(c);
        iters_end = iter_begin(c + 1);
    }
    // where CTA `cta`'s range of the tail's iterations begins (the next CTA's begins where it ends)
    __device__ int iter_begin(int cta) const
    {
        return (int)((long long)(tiles - dp_tiles) * KT * cta / G);
    }
};

}  // namespace h10

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_stream_k_tail(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                    float beta, float* __restrict__ C, const __grid_constant__ CUtensorMap tmap_a,
                    const __grid_constant__ CUtensorMap tmap_b)
{
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;
    float* const epi_scratch =
        reinterpret_cast<float*>(smem_raw + (smem_b + STAGES * B_BYTES - smem_u32(smem_raw)));

    const int tiles_m = (M + BM - 1) / BM;
    const int tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int KT = (K + BK - 1) / BK;
    if (STREAM_K && gridDim.x > (unsigned)h10::SK_SLOTS)
        __trap();  // more CTAs than workspace slots: refuse rather than race
    const h10::Schedule sch(tiles, KT);
    const int wg = warpgroup_index();
    const int wg_tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    // unit u of this CTA: (tile, k_begin, k_end); units = whole tiles, then pieces of the tail
    auto unit = [&](int u, int& tile, int& k0, int& k1, int& next_iter) {
        if (u < sch.whole) {
            tile = sch.c + u * sch.G;
            k0 = 0;
            k1 = KT;
            return;
        }
        const int i = next_iter;  // the tail's iteration this piece starts at
        const int t = i / KT;
        tile = sch.dp_tiles + t;
        k0 = i - t * KT;
        k1 = min(KT, k0 + (sch.iters_end - i));
        next_iter = i + (k1 - k0);
    };

    if (wg == 0) {
        // ---- producer: the same units in the same order ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0) {
            int it = 0;
            int next_iter = sch.iters_begin;
            for (int u = 0; u < sch.whole || next_iter < sch.iters_end; ++u) {
                int tile, k0, k1;
                unit(u, tile, k0, k1, next_iter);
                int tm, tn;
                tile_coords(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
                for (int kt = k0; kt < k1; ++kt, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    mbar_arrive_expect_tx(smem_u32(&full[s]), A_BYTES + B_BYTES);
                    tma_load_2d(smem_a + s * A_BYTES, &tmap_a, smem_u32(&full[s]), kt * BK, tm * BM);
                    tma_load_2d(smem_b + s * B_BYTES, &tmap_b, smem_u32(&full[s]), kt * BK, tn * BN);
                }
            }
        }
    } else {
        // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of every tile or piece ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const StageDescs<A_BYTES, B_BYTES> descs(smem_a + c * 64 * 128, smem_b);  // stage 0's, made once
        const int ctid = threadIdx.x - 128;  // 0 .. CONSUMER_THREADS - 1
        const bool leader = ctid == 0;
        int it = 0;
        int next_iter = sch.iters_begin;
        for (int u = 0; u < sch.whole || next_iter < sch.iters_end; ++u) {
            int tile, k0, k1;
            unit(u, tile, k0, k1, next_iter);
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
            // Pin the zeros here. Without it nvcc sinks them into the first k-step, among the wgmmas, and ptxas then
            // serializes every wgmma of the kernel (its warning C7515): with STREAM_K=0 (h6's schedule) the kernel
            // ran 8% slower than h6 on the H100.
            fence_regs(d);
            for (int kt = k0; kt < k1; ++kt, ++it) {
                const int s = it % STAGES;
                wgmma_ktile<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
                if (kt > k0 && wg_tid == 0)
                    mbar_arrive(smem_u32(&empty[(it - 1) % STAGES]));
            }
            wgmma_wait<0>();
            fence_regs(d);
            if (k1 > k0 && wg_tid == 0)
                mbar_arrive(smem_u32(&empty[(it - 1) % STAGES]));

            float4* slot_base = h10::workspace;
            if (k0 > 0) {
                // a later piece of a tile another CTA finishes: this CTA's slot, then its flag
                float4* slot = slot_base + (size_t)sch.c * (h10::SLOT_FLOATS / 4);
#pragma unroll
                for (int j = 0; j < BN / 8; ++j)
                    slot[j * CONSUMER_THREADS + ctid] = make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
                consumers_sync<CONSUMER_THREADS>();  // every consumer's writes are issued
                if (leader) {
                    __threadfence();
                    store_release_gpu(&h10::piece_ready[sch.c], 1u);
                }
                continue;
            }
            if (k1 < KT) {
                // the first piece of a cut tile: add the later pieces, CTA by CTA, in order
                const int tile_end = (tile - sch.dp_tiles + 1) * KT;  // the tail's iteration after this tile
                for (int p = sch.c + 1; p < sch.G && sch.iter_begin(p) < tile_end; ++p) {
                    if (sch.iter_begin(p + 1) == sch.iter_begin(p))
                        continue;  // a CTA with no iterations (fewer than G in the tail) wrote nothing
                    if (leader)
                        while (load_acquire_gpu(&h10::piece_ready[p]) == 0u)
                            __nanosleep(32);
                    consumers_sync<CONSUMER_THREADS>();  // the leader's acquire, then every consumer's reads
                    const float4* slot = slot_base + (size_t)p * (h10::SLOT_FLOATS / 4);
#pragma unroll
                    for (int j = 0; j < BN / 8; ++j) {
                        const float4 v = __ldcg(&slot[j * CONSUMER_THREADS + ctid]);  // from L2, not L1
                        d[4 * j] += v.x;
                        d[4 * j + 1] += v.y;
                        d[4 * j + 2] += v.z;
                        d[4 * j + 3] += v.w;
                    }
                    if (leader)
                        h10::piece_ready[p] = 0u;  // read: the next launch finds it clear
                }
            }
            store_acc_rows<BN>(d, M, N, alpha, beta, C, tm * BM + 64 * c, tn * BN, wg_tid,
                               epi_scratch + c * (EPI_WARPGROUP_BYTES / 4));
        }
    }
}
