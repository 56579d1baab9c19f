// h4: wgmma (sm_90a) from shared memory fed by TMA (cp.async.bulk.tensor) completing on mbarriers.
// Credit: wgmma fed by TMA on mbarriers, as in Pranjal Shankhdhar's "Outperforming cuBLAS on H100: a Worklog" and its
//   kernels (https://github.com/pranjalssh/fast.cu) and NVIDIA CUTLASS's sm90 GEMMs; our implementation.
//
// C = alpha * A @ B + beta * C, A and B fp16 (or bf16 with -DELEM_BF16=1), fp32 accumulation, fp32 C.
// Layout: A row-major (M x K), B column-major (N rows of K): both K-major, as wgmma reads them
// without transposition. C row-major fp32.
//
// What this rung adds over h3 (mma.sync + ldmatrix + cp.async):
//  * Loads: one thread issues two TMA box copies per k-tile (A: BM x 64, B: BN x 64 elements)
//    described by tensor maps built on the host (cuTensorMapEncodeTiled) and passed by value
//    as __grid_constant__ parameters. The copy engine writes the tile with the 128-byte swizzle
//    (the XOR pattern h3 computed by hand), fills out-of-bounds rows and columns with zeros (so M, N
//    and K need no padding) and signals an mbarrier when the stage's bytes have all arrived.
//  * Math: a warpgroup (4 warps) issues wgmma.mma_async m64nBNk16 with both operands read straight
//    from shared memory through matrix descriptors: no ldmatrix, no register fragments of A or B.
//  * Pipeline: STAGES k-tiles in flight; after the wgmmas of stage s complete, the block syncs and
//    thread 0 refills s with the k-tile STAGES ahead.
// What it leaves for later rungs: the math waits for its own wgmmas before the refill is issued,
// and the single warpgroup does loads, math and the epilogue in turn (h5 splits these roles).
// Defaults: 128 x 128 x 64 tiles, 3 stages (97 KiB of shared memory: two blocks per SM).
//
// Backend nvcc (-gencode=arch=compute_90a,code=sm_90a), parameters as -D defines, extern "C" entry.

// The helpers it shares with the other Hopper rungs (mbarriers, TMA loads, wgmma, the epilogue, the tile
// order) are in hopper.cuh; this file holds what h4 adds: its kernel.
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
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

#define WGMMA wgmma_m64<BN>

static_assert(BK == 64, "one 128-byte swizzled row of K per tile row: BK = 64 (fp16/bf16)");
static_assert(BM % 64 == 0 && BM <= 256, "BM is a multiple of 64 (m64 wgmmas), at most 256 (TMA box)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is the wgmma N: 64, 128 or 256");
static_assert((BM / 64) * (BN / 2) <= 128, "at most 128 fp32 accumulators per thread");

// One warpgroup (128 threads) computes a BM x BN tile: per k16 step, BM/64 wgmma m64nBNk16.
extern "C" __global__ void __launch_bounds__(128)
hgemm_wgmma_tma(int M, int N, int K, float alpha, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                float beta, float* __restrict__ C, const __grid_constant__ CUtensorMap tmap_a,
                const __grid_constant__ CUtensorMap tmap_b)
{
    constexpr int MT = BM / 64;
    constexpr uint32_t A_BYTES = BM * BK * 2;
    constexpr uint32_t B_BYTES = BN * BK * 2;

    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    // the 128-byte swizzle repeats every 1024 bytes: tiles start 1024-byte aligned
    const uint32_t smem_a = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t smem_b = smem_a + STAGES * A_BYTES;

    int tm, tn;
    tile_coords(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, tm, tn);
    const int bm = tm * BM;
    const int bn = tn * BN;
    const int KT = (K + BK - 1) / BK;  // the last k-tile may run past K: TMA fills zeros
    const int tid = threadIdx.x;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s)
            mbar_init(smem_u32(&full[s]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        for (int s = 0; s < STAGES && s < KT; ++s) {
            mbar_arrive_expect_tx(smem_u32(&full[s]), A_BYTES + B_BYTES);
            tma_load_2d(smem_a + s * A_BYTES, &tmap_a, smem_u32(&full[s]), s * BK, bm);
            tma_load_2d(smem_b + s * B_BYTES, &tmap_b, smem_u32(&full[s]), s * BK, bn);
        }
    }
    __syncthreads();

    float d[MT][BN / 2];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int i = 0; i < BN / 2; ++i)
            d[m][i] = 0.0f;

    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(smem_u32(&full[s]), (kt / STAGES) & 1);
        const uint32_t a_s = smem_a + s * A_BYTES;
        const uint32_t b_s = smem_b + s * B_BYTES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
            for (int m = 0; m < MT; ++m)
                WGMMA(d[m], sw128_desc(a_s + m * 64 * 128 + kk * 32), sw128_desc(b_s + kk * 32));
        wgmma_commit();
        wgmma_wait<0>();
        // every thread's wgmmas on stage s are done: thread 0 may refill it
        __syncthreads();
        if (tid == 0 && kt + STAGES < KT) {
            const int k0 = (kt + STAGES) * BK;
            mbar_arrive_expect_tx(smem_u32(&full[s]), A_BYTES + B_BYTES);
            tma_load_2d(a_s, &tmap_a, smem_u32(&full[s]), k0, bm);
            tma_load_2d(b_s, &tmap_b, smem_u32(&full[s]), k0, bn);
        }
    }

#pragma unroll
    for (int m = 0; m < MT; ++m)
        store_acc<BN>(d[m], M, N, alpha, beta, C, bm + 64 * m, bn, tid);
}
