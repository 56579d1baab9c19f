// h5: producer/consumer warp specialization on full/empty mbarrier pairs, 128 x 256 tiles.
// Credit: producer/consumer warpgroups with setmaxnreg, as in Pranjal Shankhdhar's "Outperforming cuBLAS on H100: a
//   Worklog" and its kernels (https://github.com/pranjalssh/fast.cu) and CUTLASS's warp-specialized sm90 kernels; our
//   implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K), C row-major fp32.
//
// What this rung adds over h4 (one warpgroup doing loads, math and stores in turn):
//  * Roles: three warpgroups. Warpgroup 0 is the producer: one of its threads issues the TMA copies;
//    it gives registers back (setmaxnreg.dec to 40). Warpgroups 1 and 2 are consumers, each owning
//    64 x 256 of the 128 x 256 block tile (one wgmma m64n256k16 per k16 step, 128 fp32 accumulators
//    a thread); they take the registers (setmaxnreg.inc to 232).
//  * Two mbarriers per stage: `full` (the producer's expect_tx, completed by the copy engine) and
//    `empty` (one arrival per consumer when its wgmmas on the stage are done). The producer never
//    waits for the math, only for a free stage, so loads run STAGES k-tiles ahead without a block-wide
//    barrier in the loop.
//  * Consumers keep one wgmma group in flight: after issuing k-tile kt they wait for kt-1 only
//    (wgmma.wait_group 1) and release that stage.
//  * Larger tile: 128 x 256 per block halves the shared-memory traffic per flop of h4's 128 x 128
//    (B is read once for both consumers' rows... and A once per 256 columns).
// Expected: well past h4 (public kernels: about 500-610 TFLOP/s for these steps on an H100).
// Defaults: 128 x 256 x 64, 4 stages (192 KiB of shared memory, one block per SM).
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

// The helpers it shares with the other Hopper rungs (mbarriers, TMA loads, wgmma, the epilogue, the tile
// order) are in hopper.cuh; this file holds what h5 adds: its kernel.
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
#define GROUP_M 8
#endif
#define CONSUMERS 2
#define BM (64 * CONSUMERS)

#define WGMMA wgmma_m64<BN>

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BN == 128 || BN == 256, "BN is the wgmma N: 128 or 256");

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_warp_specialized(int M, int N, int K, float alpha, const elem_t* __restrict__ A,
                       const elem_t* __restrict__ B, float beta, float* __restrict__ C,
                       const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b)
{
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    __shared__ __align__(8) uint64_t empty[STAGES];
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;

    int tm, tn;
    tile_coords(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, tm, tn);
    const int bm = tm * BM;
    const int bn = tn * BN;
    const int KT = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128;
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
        // ---- producer ----
        setmaxnreg_dec<40>();
        if (wg_tid == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                // a fresh barrier counts as having completed the phase before its first, so the
                // first pass over the stages does not wait
                mbar_wait(smem_u32(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(smem_u32(&full[s]), A_BYTES + B_BYTES);
                tma_load_2d(smem_a + s * A_BYTES, &tmap_a, smem_u32(&full[s]), kt * BK, bm);
                tma_load_2d(smem_b + s * B_BYTES, &tmap_b, smem_u32(&full[s]), kt * BK, bn);
            }
        }
    } else {
        // ---- consumers: warpgroup c owns rows bm + 64c .. bm + 64c + 63 ----
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i)
            d[i] = 0.0f;
        for (int kt = 0; kt < KT; ++kt) {
            const int s = kt % STAGES;
            mbar_wait(smem_u32(&full[s]), (kt / STAGES) & 1);
            const uint32_t a_s = smem_a + s * A_BYTES + c * 64 * 128;
            const uint32_t b_s = smem_b + s * B_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                WGMMA(d, sw128_desc(a_s + kk * 32), sw128_desc(b_s + kk * 32));
            wgmma_commit();
            // k-tile kt-1's wgmmas are done once at most one group (kt's) is pending
            wgmma_wait<1>();
            fence_regs(d);
            if (kt > 0 && wg_tid == 0)
                mbar_arrive(smem_u32(&empty[(kt - 1) % STAGES]));
        }
        wgmma_wait<0>();
        fence_regs(d);
        store_acc<BN>(d, M, N, alpha, beta, C, bm + 64 * c, bn, wg_tid);
    }
}
