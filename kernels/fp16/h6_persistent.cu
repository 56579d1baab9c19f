// h6: a persistent kernel with a grouped tile scheduler; the epilogue overlaps the next tile's loads.
// Credit: persistent warp-specialized kernels, as in Pranjal Shankhdhar's "Outperforming cuBLAS on H100: a Worklog" and
//   its kernels (https://github.com/pranjalssh/fast.cu) and CUTLASS's persistent tile scheduler; our implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32.
//
// What this rung adds over h5 (one 128 x 256 tile per block, blocks launched in waves):
//  * The grid is one block per SM (gridDim.x = min(SMs, tiles)); block b takes tiles b, b + grid,
//    b + 2 grid, ... in the grouped order of h3-h5 (GROUP_M block rows at a time), so the tiles in
//    flight at one moment share A and B panels in L2.
//  * The producer and the consumers walk the same tile sequence and count k-tiles across tiles, so
//    the stage ring never drains: while the consumers write the accumulators of tile i to C, the
//    producer is already filling the stages with tile i+1's first k-tiles.
//  * No tail wave: 8192^2 with 128 x 256 tiles is 2048 tiles, 15.5 waves of 132 blocks for h5;
//    a persistent grid loses only the last partial round and the per-block start-up cost once.
//  * Rows of C off the 32-byte grid (N % 8 != 0) go out through shared memory (hopper.cuh, store_acc_rows):
//    written straight from the accumulators they ran at 42% (N = 4097) and 60% (N = 4098) of N = 4096 at
//    4096 x N x 1024 on the H100, where storing C dominates. Each consumer warp has its own 2560-byte slice after
//    the stages; aligned rows take store_acc as before.
// Expected: some percent over h5 (public kernels: about 610 -> 660 TFLOP/s for this step).
// Defaults: 128 x 256 x 64, 4 stages (192 KiB of shared memory, plus 20 KiB of epilogue slices), GROUP_M = 16
// (16 block rows of 128 = 2048 rows of A per group: measured 2-5% faster than 8 at 8192).
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

// The helpers it shares with the other Hopper rungs (mbarriers, TMA loads, wgmma, the epilogue, the tile
// order) are in hopper.cuh; this file holds what h6 adds: its kernel.
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
#define CONSUMERS 2
#define BM (64 * CONSUMERS)

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BN == 128 || BN == 256, "BN is the wgmma N: 128 or 256");

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_persistent(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
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
    // after the stages: each consumer warpgroup's slice for the epilogue of rows off the 32-byte grid (hopper.cuh)
    float* const epi_scratch =
        reinterpret_cast<float*>(smem_raw + (smem_b + STAGES * B_BYTES - smem_u32(smem_raw)));

    const int tiles_m = (M + BM - 1) / BM;
    const int tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int KT = (K + BK - 1) / BK;
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

    if (wg == 0) {
        // ---- producer: runs ahead across tile boundaries ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0) {
            int it = 0;  // k-tiles issued so far by this block, over all its tiles
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tm, tn;
                tile_coords(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(smem_u32(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    mbar_arrive_expect_tx(smem_u32(&full[s]), A_BYTES + B_BYTES);
                    tma_load_2d(smem_a + s * A_BYTES, &tmap_a, smem_u32(&full[s]), kt * BK, tm * BM);
                    tma_load_2d(smem_b + s * B_BYTES, &tmap_b, smem_u32(&full[s]), kt * BK, tn * BN);
                }
            }
        }
    } else {
        // ---- consumers: warpgroup c owns rows 64c .. 64c + 63 of every tile ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const StageDescs<A_BYTES, B_BYTES> descs(smem_a + c * 64 * 128, smem_b);  // stage 0's, made once
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
            float d[BN / 2];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                d[i] = 0.0f;
            for (int kt = 0; kt < KT; ++kt, ++it) {
                const int s = it % STAGES;
                wgmma_ktile<BN, BK>(d, smem_u32(&full[s]), (it / STAGES) & 1, descs.a(s), descs.b(s));
                if (kt > 0 && wg_tid == 0)
                    mbar_arrive(smem_u32(&empty[(it - 1) % STAGES]));
            }
            wgmma_wait<0>();
            fence_regs(d);
            // the tile's last stage is free: the producer refills it while we store
            if (wg_tid == 0)
                mbar_arrive(smem_u32(&empty[(it - 1) % STAGES]));
            store_acc_rows<BN>(d, M, N, alpha, beta, C, tm * BM + 64 * c, tn * BN, wg_tid,
                               epi_scratch + c * (EPI_WARPGROUP_BYTES / 4));
        }
    }
}
