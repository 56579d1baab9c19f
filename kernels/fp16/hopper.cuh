// Helpers shared by the Hopper rungs h4 to h14 (h4_wgmma_tma.cu, h5_warp_specialized.cu, h6_persistent.cu,
// h7_cluster_multicast.cu, h8_split_k_small_problems.cu, h9_pingpong_consumers.cu, h10_stream_k_tail.cu,
// h11_skinny_swap_ab.cu, h12_tma_store_epilogue.cu, h13_cluster_split_k.cu, h14_fp8_scaled.cu): the element type
// (fp16, or bf16 with -DELEM_BF16=1; h14's fp8 operands are bytes), mbarriers, TMA box loads and stores (with the
// bulk groups and the proxy fence a store needs), thread-block clusters (TMA multicast, arrivals on a peer CTA's
// mbarrier, stores into a peer's shared memory, cluster barriers, a CTA's tile in its cluster), wgmma on
// shared-memory tiles written with the 128-byte swizzle (fp16/bf16 k16, fp8 e4m3 k32), the warpgroup index (known
// warp-uniform), register reallocation between warpgroups, the accumulator epilogues (from registers, staged for
// rows off sectors, or staged for TMA stores; into fp32, fp16 or bf16 C), the grouped tile order, and flags between
// the CTAs of one launch. Each rung includes this file by a quoted path and holds only its own kernel, so the rung
// file shows its idea. gemmprof's nvcc build passes -I for the rung's folder, and its cubin cache key and the tune
// cache's source hash read this header too (gemmprof.catalog.sources): editing it rebuilds every rung that includes
// it.

#pragma once

#include <cuda.h>        // CUtensorMap (only the type: the descriptors are built on the host)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

// The element type of A and B: fp16 by default, bf16 with -DELEM_BF16=1. Nothing else changes.
#if defined(ELEM_BF16) && ELEM_BF16
typedef __nv_bfloat16 elem_t;
#define WGMMA_TYPE "bf16"
#else
typedef __half elem_t;
#define WGMMA_TYPE "f16"
#endif

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// The calling thread's warpgroup (threads 128 w .. 128 w + 127), read through a shuffle from lane 0 so that nvcc
// knows it is the same in every lane of the warp (CUTLASS's canonical_warp_group_idx does the same): whatever a
// consumer derives from it, its stages' wgmma descriptors above all, then lives in uniform registers, and the
// wgmma reads them there. From threadIdx.x / 128 the descriptors were per-thread values, moved into uniform
// registers (R2UR) before every wgmma: 27-37 instructions between a k-tile's first and last wgmma in h11, 9-21 this
// way (benchmarks/2026-11-29_h200_uniform).
__device__ __forceinline__ int warpgroup_index()
{
    return __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
}

// ---- mbarrier: a 64-bit shared-memory object counting arrivals and transaction bytes ----
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// Arrive once and announce `bytes` still to come from the copy engine (the TMA completes them).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Spin until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// ---- TMA: one 2D box of the tensor map into shared memory, completing on an mbarrier ----
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int x,
                                            int y)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(x), "r"(y)
        : "memory");
}

// Fetch a tensor map (a kernel parameter) into the copy engine's descriptor cache ahead of its first copy: after
// the timing's L2 flush that first fetch comes from DRAM, on the critical path of a kernel of a few microseconds
// (h8, h12 at their start).
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- TMA stores (h12): a box of shared memory to global memory, tracked by the issuing thread's bulk groups ----
// Shared-memory writes of the generic proxy (st.shared) become visible to the copy engine (the async proxy) only
// after this fence; each writing thread runs it before the barrier that precedes the store.
__device__ __forceinline__ void fence_proxy_async_smem()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// One 2D box from shared memory at `src` into the tensor map's global tensor at column x, row y; the engine
// clips the box at the tensor's edges (nothing is written past M or N).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     reinterpret_cast<uint64_t>(map)),
                 "r"(src), "r"(x), "r"(y)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Wait until at most N of this thread's committed bulk groups still read their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// Wait until at most N of this thread's committed bulk groups are incomplete (their writes done).
template <int N>
__device__ __forceinline__ void bulk_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// A barrier of the 128 threads of one warpgroup (named barrier `id`; 0 is __syncthreads, 1 consumers_sync).
__device__ __forceinline__ void warpgroup_sync(int id)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

// ---- thread-block clusters (h7): CTAs of one cluster reach each other's shared memory ----
__device__ __forceinline__ uint32_t cluster_ctarank()
{
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// Every thread of every CTA of the cluster waits for all the others (barrier.cluster is .aligned: the whole warp
// executes it together, hence the __syncwarp). The arrive is .relaxed: it orders execution, not the thread's earlier
// memory operations (a .release arrive puts a GPU-wide fence, MEMBAR.ALL.GPU, in front of it, which waits for the
// thread's global stores). Enough where those are complete or ordered by a fence of their own: after the mbarrier
// inits, which fence.mbarrier_init.release.cluster releases to the cluster (barriers_set_up), or after
// wgmma.wait_group 0, when wgmma's reads of shared memory are done (h13: every CTA is past its main loop before peers
// overwrite its stages).
__device__ __forceinline__ void cluster_sync_relaxed()
{
    __syncwarp();
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

// The producer's last waits in a cluster that multicasts into its CTAs' stages (h7-h9, h12), in place of a closing
// cluster barrier: the releases of the last RING k-tiles of the `issued` it loaded. When they have completed, every
// arrival due on this CTA's `empty` barriers, its own consumers' and its peers', has landed, and every copy into its
// stages (its own and the peers' multicasts) has been read, so no peer will reach this CTA's shared memory again and
// the CTA may exit. A closing barrier.cluster did the same with a .release arrive, whose GPU-wide fence waited for
// the tile's stores of C: about 1 us of a 9 us kernel at 1024^3 on the H100
// (benchmarks/2026-11-25_h100_sweep_confirmed).
// After thread 0 has set up the mbarriers and fenced them (fence.mbarrier_init.release.cluster): in a cluster that
// multicasts into its CTAs' stages (h7-h9, h12), every CTA of it waits for the others, so that no copy or remote
// arrive reaches a CTA before its barriers exist (.relaxed: the fence has released the inits); alone, the block.
// producer_tail below is the other end of the same protocol.
template <bool CLUSTERED>
__device__ __forceinline__ void barriers_set_up()
{
    if (CLUSTERED)
        cluster_sync_relaxed();
    else
        __syncthreads();
}

template <int RING>  // the ring's stages (not named STAGES: the rungs' -DSTAGES would replace it)
__device__ __forceinline__ void producer_tail(const uint64_t* empty, int issued)
{
    for (int i = 0; i < RING; ++i, ++issued)
        mbar_wait(smem_u32(&empty[issued % RING]), ((issued / RING) & 1) ^ 1);
}

// Arrive once on the mbarrier at the same shared-memory offset as `bar` in CTA `cta` of the cluster (mapa turns
// the local address into that CTA's). The arrive keeps the default .release.cta semantics, as CUTLASS's
// ClusterBarrier::arrive does: `.release.cluster` compiles to MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before the arrive
// (cuobjdump, nvcc 13.0): the calling thread waits until its earlier memory operations are visible GPU-wide.
// FENCED = true builds that form, to measure what it costs.
template <bool FENCED = false>
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta)
{
    if (FENCED)
        asm volatile(
            "{\n.reg .b32 remote;\n"
            "mapa.shared::cluster.u32 remote, %0, %1;\n"
            "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
            "r"(cta)
            : "memory");
    else
        asm volatile(
            "{\n.reg .b32 remote;\n"
            "mapa.shared::cluster.u32 remote, %0, %1;\n"
            "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
            "r"(cta)
            : "memory");
}

// Four floats into the shared memory of CTA `cta` of the cluster, at the offset `addr` has in this CTA (distributed
// shared memory, h13), counted as 16 bytes done on the mbarrier at offset `bar` there (st.async's complete_tx): the
// receiver waits on its own mbarrier, and no fence or cluster barrier orders the stores.
__device__ __forceinline__ void st_async_v4(uint32_t addr, uint32_t bar, uint32_t cta, float a, float b, float c,
                                            float d)
{
    asm volatile(
        "{\n.reg .b32 remote, rbar;\n"
        "mapa.shared::cluster.u32 remote, %0, %2;\n"
        "mapa.shared::cluster.u32 rbar, %1, %2;\n"
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [remote], {%3, %4, %5, %6}, [rbar];\n}\n" ::"r"(
            addr),
        "r"(bar), "r"(cta), "f"(a), "f"(b), "f"(c), "f"(d)
        : "memory");
}

// One 2D box of the tensor map into the same shared-memory offset `dst` of every CTA in `cta_mask` (bit i:
// %cluster_ctarank i), completing its bytes on the mbarrier at offset `bar` in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int x,
                                                      int y, uint16_t cta_mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(x), "r"(y), "h"(cta_mask)
        : "memory");
}

// ---- wgmma ----
// Shared-memory matrix descriptor of a K-major tile written by TMA with the 128-byte swizzle:
// start address >> 4 (bits 0-13), leading byte offset (unused for K-major swizzled tiles; 1),
// stride byte offset 1024 >> 4 (8 rows of 128 bytes, bits 32-45), swizzle mode 1 = 128B (bits 62-63).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t smem_addr)
{
    return (uint64_t)((smem_addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
           ((uint64_t)1 << 62);
}

// A consumer's descriptors of a ring's stage 0, made once (its rows of the wgmma's A, a_base, and of its B, b_base),
// and stage s's by addition: the address field is the address >> 4 and shared-memory addresses stay below 256 KiB,
// so no addition carries out of it and desc(base) + (offset >> 4) is desc(base + offset) exactly; a k16 step (32
// bytes) adds 2 (wgmma_ktile). Made from the addresses at every k-tile (mask, shift, or per wgmma) they put 32-60
// instructions between a k-tile's first and last wgmma; made once, 15-37 (benchmarks/2026-11-29_h200_descriptors).
template <uint32_t A_STAGE_BYTES, uint32_t B_STAGE_BYTES>
struct StageDescs {
    uint64_t a0, b0;
    __device__ __forceinline__ StageDescs(uint32_t a_base, uint32_t b_base)
        : a0(sw128_desc(a_base)), b0(sw128_desc(b_base))
    {
    }
    __device__ __forceinline__ uint64_t a(int s) const { return a0 + s * (A_STAGE_BYTES >> 4); }
    __device__ __forceinline__ uint64_t b(int s) const { return b0 + s * (B_STAGE_BYTES >> 4); }
};

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N_PENDING>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N_PENDING) : "memory");
}

// Keep the compiler from moving accumulator registers while a wgmma that writes them is in flight.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

// wgmma m64nNk16 for every N that wgmma has (8 to 256 in steps of 8): fp32 accumulators d[0 .. N/2 - 1] (%0 ..),
// then the descriptors of A and B. The register list for N is the first N / 8 groups of four of one table
// (WGMMA_D_g: accumulators 0 .. 4g - 1, WGMMA_OPS_g: their operands, WGMMA_AB_g: the descriptors' numbers after
// them), so that each width is one line of WGMMA_N below. scale-d = 1: D = A * B + D.
#define WGMMA_D_1 "%0, %1, %2, %3"
#define WGMMA_D_2 WGMMA_D_1 ", %4, %5, %6, %7"
#define WGMMA_D_3 WGMMA_D_2 ", %8, %9, %10, %11"
#define WGMMA_D_4 WGMMA_D_3 ", %12, %13, %14, %15"
#define WGMMA_D_5 WGMMA_D_4 ", %16, %17, %18, %19"
#define WGMMA_D_6 WGMMA_D_5 ", %20, %21, %22, %23"
#define WGMMA_D_7 WGMMA_D_6 ", %24, %25, %26, %27"
#define WGMMA_D_8 WGMMA_D_7 ", %28, %29, %30, %31"
#define WGMMA_D_9 WGMMA_D_8 ", %32, %33, %34, %35"
#define WGMMA_D_10 WGMMA_D_9 ", %36, %37, %38, %39"
#define WGMMA_D_11 WGMMA_D_10 ", %40, %41, %42, %43"
#define WGMMA_D_12 WGMMA_D_11 ", %44, %45, %46, %47"
#define WGMMA_D_13 WGMMA_D_12 ", %48, %49, %50, %51"
#define WGMMA_D_14 WGMMA_D_13 ", %52, %53, %54, %55"
#define WGMMA_D_15 WGMMA_D_14 ", %56, %57, %58, %59"
#define WGMMA_D_16 WGMMA_D_15 ", %60, %61, %62, %63"
#define WGMMA_D_17 WGMMA_D_16 ", %64, %65, %66, %67"
#define WGMMA_D_18 WGMMA_D_17 ", %68, %69, %70, %71"
#define WGMMA_D_19 WGMMA_D_18 ", %72, %73, %74, %75"
#define WGMMA_D_20 WGMMA_D_19 ", %76, %77, %78, %79"
#define WGMMA_D_21 WGMMA_D_20 ", %80, %81, %82, %83"
#define WGMMA_D_22 WGMMA_D_21 ", %84, %85, %86, %87"
#define WGMMA_D_23 WGMMA_D_22 ", %88, %89, %90, %91"
#define WGMMA_D_24 WGMMA_D_23 ", %92, %93, %94, %95"
#define WGMMA_D_25 WGMMA_D_24 ", %96, %97, %98, %99"
#define WGMMA_D_26 WGMMA_D_25 ", %100, %101, %102, %103"
#define WGMMA_D_27 WGMMA_D_26 ", %104, %105, %106, %107"
#define WGMMA_D_28 WGMMA_D_27 ", %108, %109, %110, %111"
#define WGMMA_D_29 WGMMA_D_28 ", %112, %113, %114, %115"
#define WGMMA_D_30 WGMMA_D_29 ", %116, %117, %118, %119"
#define WGMMA_D_31 WGMMA_D_30 ", %120, %121, %122, %123"
#define WGMMA_D_32 WGMMA_D_31 ", %124, %125, %126, %127"
#define WGMMA_OPS_1 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define WGMMA_OPS_2 WGMMA_OPS_1, "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define WGMMA_OPS_3 WGMMA_OPS_2, "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define WGMMA_OPS_4 WGMMA_OPS_3, "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define WGMMA_OPS_5 WGMMA_OPS_4, "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
#define WGMMA_OPS_6 WGMMA_OPS_5, "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define WGMMA_OPS_7 WGMMA_OPS_6, "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
#define WGMMA_OPS_8 WGMMA_OPS_7, "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define WGMMA_OPS_9 WGMMA_OPS_8, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
#define WGMMA_OPS_10 WGMMA_OPS_9, "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define WGMMA_OPS_11 WGMMA_OPS_10, "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
#define WGMMA_OPS_12 WGMMA_OPS_11, "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define WGMMA_OPS_13 WGMMA_OPS_12, "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
#define WGMMA_OPS_14 WGMMA_OPS_13, "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define WGMMA_OPS_15 WGMMA_OPS_14, "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59])
#define WGMMA_OPS_16 WGMMA_OPS_15, "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define WGMMA_OPS_17 WGMMA_OPS_16, "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
#define WGMMA_OPS_18 WGMMA_OPS_17, "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define WGMMA_OPS_19 WGMMA_OPS_18, "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75])
#define WGMMA_OPS_20 WGMMA_OPS_19, "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define WGMMA_OPS_21 WGMMA_OPS_20, "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83])
#define WGMMA_OPS_22 WGMMA_OPS_21, "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define WGMMA_OPS_23 WGMMA_OPS_22, "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91])
#define WGMMA_OPS_24 WGMMA_OPS_23, "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define WGMMA_OPS_25 WGMMA_OPS_24, "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99])
#define WGMMA_OPS_26 WGMMA_OPS_25, "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define WGMMA_OPS_27 WGMMA_OPS_26, "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107])
#define WGMMA_OPS_28 WGMMA_OPS_27, "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define WGMMA_OPS_29 WGMMA_OPS_28, "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115])
#define WGMMA_OPS_30 WGMMA_OPS_29, "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define WGMMA_OPS_31 WGMMA_OPS_30, "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123])
#define WGMMA_OPS_32 WGMMA_OPS_31, "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define WGMMA_AB_1 "%4, %5"
#define WGMMA_AB_2 "%8, %9"
#define WGMMA_AB_3 "%12, %13"
#define WGMMA_AB_4 "%16, %17"
#define WGMMA_AB_5 "%20, %21"
#define WGMMA_AB_6 "%24, %25"
#define WGMMA_AB_7 "%28, %29"
#define WGMMA_AB_8 "%32, %33"
#define WGMMA_AB_9 "%36, %37"
#define WGMMA_AB_10 "%40, %41"
#define WGMMA_AB_11 "%44, %45"
#define WGMMA_AB_12 "%48, %49"
#define WGMMA_AB_13 "%52, %53"
#define WGMMA_AB_14 "%56, %57"
#define WGMMA_AB_15 "%60, %61"
#define WGMMA_AB_16 "%64, %65"
#define WGMMA_AB_17 "%68, %69"
#define WGMMA_AB_18 "%72, %73"
#define WGMMA_AB_19 "%76, %77"
#define WGMMA_AB_20 "%80, %81"
#define WGMMA_AB_21 "%84, %85"
#define WGMMA_AB_22 "%88, %89"
#define WGMMA_AB_23 "%92, %93"
#define WGMMA_AB_24 "%96, %97"
#define WGMMA_AB_25 "%100, %101"
#define WGMMA_AB_26 "%104, %105"
#define WGMMA_AB_27 "%108, %109"
#define WGMMA_AB_28 "%112, %113"
#define WGMMA_AB_29 "%116, %117"
#define WGMMA_AB_30 "%120, %121"
#define WGMMA_AB_31 "%124, %125"
#define WGMMA_AB_32 "%128, %129"
#define WGMMA_N(G, N)                                                                                              \
    else if constexpr (BN_W == N) asm volatile(                                                                    \
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                 \
        "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_##G "}, "            \
        WGMMA_AB_##G ", p, 1, 1, 0, 0;\n}\n"                                                                         \
        : WGMMA_OPS_##G                                                                                            \
        : "l"(desc_a), "l"(desc_b));

// wgmma with N = BN_W columns: the rungs' consumer tile widths (h12's fitted widths are any multiple of 8).
template <int BN_W>
__device__ __forceinline__ void wgmma_m64(float (&d)[BN_W / 2], uint64_t desc_a, uint64_t desc_b)
{
    static_assert(BN_W % 8 == 0 && BN_W >= 8 && BN_W <= 256, "wgmma's N: a multiple of 8 from 8 to 256");
    if constexpr (false) {
    }
    WGMMA_N(1, 8)
    WGMMA_N(2, 16)
    WGMMA_N(3, 24)
    WGMMA_N(4, 32)
    WGMMA_N(5, 40)
    WGMMA_N(6, 48)
    WGMMA_N(7, 56)
    WGMMA_N(8, 64)
    WGMMA_N(9, 72)
    WGMMA_N(10, 80)
    WGMMA_N(11, 88)
    WGMMA_N(12, 96)
    WGMMA_N(13, 104)
    WGMMA_N(14, 112)
    WGMMA_N(15, 120)
    WGMMA_N(16, 128)
    WGMMA_N(17, 136)
    WGMMA_N(18, 144)
    WGMMA_N(19, 152)
    WGMMA_N(20, 160)
    WGMMA_N(21, 168)
    WGMMA_N(22, 176)
    WGMMA_N(23, 184)
    WGMMA_N(24, 192)
    WGMMA_N(25, 200)
    WGMMA_N(26, 208)
    WGMMA_N(27, 216)
    WGMMA_N(28, 224)
    WGMMA_N(29, 232)
    WGMMA_N(30, 240)
    WGMMA_N(31, 248)
    WGMMA_N(32, 256)
}

// One k-tile of a consumer warpgroup: wait until the stage's bytes have landed (its `full` mbarrier reaches the phase
// of `parity`), issue the k-tile's STEPS wgmmas (`issue(kk)`, kk = 0 .. STEPS - 1), commit them, and wait until only
// this group may still run: the previous k-tile's wgmmas are done, so its stage can be released.
template <int STEPS, int R, typename Issue>
__device__ __forceinline__ void ktile_wgmmas(float (&d)[R], uint32_t full_bar, uint32_t parity, Issue issue)
{
    mbar_wait(full_bar, parity);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < STEPS; ++kk)
        issue(kk);
    wgmma_commit();
    wgmma_wait<1>();
    fence_regs(d);
}

// The fp16/bf16 k-tile (h6-h8, h10-h13; h5, the rung that introduces it, writes it out): BK_T / 16 wgmmas on the
// warpgroup's 64 rows of the wgmma's A (desc_a; h11's are 64 rows of B) and the stage's BN_W rows of its B (desc_b),
// the stage's descriptors (StageDescs); a k16 step advances 32 bytes, 2 in the descriptors.
template <int BN_W, int BK_T>
__device__ __forceinline__ void wgmma_ktile(float (&d)[BN_W / 2], uint32_t full_bar, uint32_t parity, uint64_t desc_a,
                                            uint64_t desc_b)
{
    ktile_wgmmas<BK_T / 16>(d, full_bar, parity, [&](int kk) {
        wgmma_m64<BN_W>(d, desc_a + 2 * kk, desc_b + 2 * kk);
    });
}
// ---- fp8 wgmma (h14): e4m3 x e4m3 into fp32, m64nNk32 ----
// The same tiles as above in bytes: a 128-byte swizzled row holds 128 fp8 elements, so a k-tile of BK_T = 128 is
// four k32 steps of 32 bytes each (the k16 steps of fp16 advance 32 bytes too), and the descriptors (sw128_desc) are
// the same. fp8 operands must be K-major (no transpose immediates), and `scale_d` is a run-time predicate: 0 makes
// D = A * B (a fresh accumulator, h14's block scales), 1 D = A * B + D. The operand of scale_d follows the
// descriptors: number 4g + 2 for g groups of accumulators (WGMMA_SD_g).
#define WGMMA_SD_1 "%6"
#define WGMMA_SD_2 "%10"
#define WGMMA_SD_3 "%14"
#define WGMMA_SD_4 "%18"
#define WGMMA_SD_5 "%22"
#define WGMMA_SD_6 "%26"
#define WGMMA_SD_7 "%30"
#define WGMMA_SD_8 "%34"
#define WGMMA_SD_9 "%38"
#define WGMMA_SD_10 "%42"
#define WGMMA_SD_11 "%46"
#define WGMMA_SD_12 "%50"
#define WGMMA_SD_13 "%54"
#define WGMMA_SD_14 "%58"
#define WGMMA_SD_15 "%62"
#define WGMMA_SD_16 "%66"
#define WGMMA_SD_17 "%70"
#define WGMMA_SD_18 "%74"
#define WGMMA_SD_19 "%78"
#define WGMMA_SD_20 "%82"
#define WGMMA_SD_21 "%86"
#define WGMMA_SD_22 "%90"
#define WGMMA_SD_23 "%94"
#define WGMMA_SD_24 "%98"
#define WGMMA_SD_25 "%102"
#define WGMMA_SD_26 "%106"
#define WGMMA_SD_27 "%110"
#define WGMMA_SD_28 "%114"
#define WGMMA_SD_29 "%118"
#define WGMMA_SD_30 "%122"
#define WGMMA_SD_31 "%126"
#define WGMMA_SD_32 "%130"
#define WGMMA_E4M3_N(G, N)                                                                                         \
    else if constexpr (BN_W == N) asm volatile(                                                                    \
        "{\n.reg .pred p;\nsetp.ne.b32 p, " WGMMA_SD_##G ", 0;\n"                                                  \
        "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" WGMMA_D_##G "}, " WGMMA_AB_##G ", p, 1, 1;\n}\n" \
        : WGMMA_OPS_##G                                                                                            \
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));

template <int BN_W>
__device__ __forceinline__ void wgmma_m64_e4m3(float (&d)[BN_W / 2], uint64_t desc_a, uint64_t desc_b,
                                               int scale_d = 1)
{
    static_assert(BN_W % 8 == 0 && BN_W >= 8 && BN_W <= 256, "wgmma's N: a multiple of 8 from 8 to 256");
    if constexpr (false) {
    }
    WGMMA_E4M3_N(1, 8)
    WGMMA_E4M3_N(2, 16)
    WGMMA_E4M3_N(3, 24)
    WGMMA_E4M3_N(4, 32)
    WGMMA_E4M3_N(5, 40)
    WGMMA_E4M3_N(6, 48)
    WGMMA_E4M3_N(7, 56)
    WGMMA_E4M3_N(8, 64)
    WGMMA_E4M3_N(9, 72)
    WGMMA_E4M3_N(10, 80)
    WGMMA_E4M3_N(11, 88)
    WGMMA_E4M3_N(12, 96)
    WGMMA_E4M3_N(13, 104)
    WGMMA_E4M3_N(14, 112)
    WGMMA_E4M3_N(15, 120)
    WGMMA_E4M3_N(16, 128)
    WGMMA_E4M3_N(17, 136)
    WGMMA_E4M3_N(18, 144)
    WGMMA_E4M3_N(19, 152)
    WGMMA_E4M3_N(20, 160)
    WGMMA_E4M3_N(21, 168)
    WGMMA_E4M3_N(22, 176)
    WGMMA_E4M3_N(23, 184)
    WGMMA_E4M3_N(24, 192)
    WGMMA_E4M3_N(25, 200)
    WGMMA_E4M3_N(26, 208)
    WGMMA_E4M3_N(27, 216)
    WGMMA_E4M3_N(28, 224)
    WGMMA_E4M3_N(29, 232)
    WGMMA_E4M3_N(30, 240)
    WGMMA_E4M3_N(31, 248)
    WGMMA_E4M3_N(32, 256)
}

// wgmma_ktile for e4m3 operands: the k-tile's BK_T / 32 k32 wgmmas (32 bytes apart, 2 in the descriptors, as fp16's
// k16 steps), through ktile_wgmmas (the same wait, commit and wait for the previous k-tile).
template <int BN_W, int BK_T>
__device__ __forceinline__ void wgmma_ktile_e4m3(float (&d)[BN_W / 2], uint32_t full_bar, uint32_t parity,
                                                 uint64_t desc_a, uint64_t desc_b)
{
    ktile_wgmmas<BK_T / 32>(d, full_bar, parity, [&](int kk) {
        wgmma_m64_e4m3<BN_W>(d, desc_a + 2 * kk, desc_b + 2 * kk);
    });
}

// ---- register reallocation (h5-h7): the producer warpgroup gives registers back, consumers take them ----
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---- epilogue: one warpgroup's 64 x BN_W accumulator tile to C (row-major fp32, or fp16/bf16 for h14) ----
// wgmma's accumulator layout: warp w of the warpgroup holds rows 16w .. 16w+15; for each n8 column
// block j a thread holds d[4j], d[4j+1] at (row lane/4, columns 8j + 2(lane%4) + {0,1}) and d[4j+2],
// d[4j+3] eight rows further down. Stores are predicated on M and N; with beta == 0 C is never read.

// Two fp32 accumulators of adjacent columns as one 4-byte pair of C's type (round to nearest even).
template <typename T>
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack_half2<__half>(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack_half2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}

// A thread's two adjacent columns of C as one store (fp32: a float2; half: the packed pair) and as one read.
__device__ __forceinline__ void store_pair(float* p, float v0, float v1)
{
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
}
template <typename T>
__device__ __forceinline__ void store_pair(T* p, float v0, float v1)
{
    *reinterpret_cast<uint32_t*>(p) = pack_half2<T>(v0, v1);
}
__device__ __forceinline__ float2 load_pair(const float* p)
{
    return *reinterpret_cast<const float2*>(p);
}
template <typename T>
__device__ __forceinline__ float2 load_pair(const T* p)
{
    return make_float2(static_cast<float>(p[0]), static_cast<float>(p[1]));
}

// Pairs of columns as one store where rows start on the pair's size: N even (fp32 C is 8-byte aligned as every
// caller allocates it; a half C's 4-byte alignment is checked); element by element otherwise.
template <int BN_W, typename T = float>
__device__ __forceinline__ void store_acc(const float (&d)[BN_W / 2], int M, int N, float alpha, float beta,
                                          T* __restrict__ C, int row0, int col0, int wg_tid)
{
    const int warp = wg_tid >> 5;
    const int lane = wg_tid & 31;
    const int r = row0 + warp * 16 + (lane >> 2);
    const int cb = col0 + 2 * (lane & 3);
    const bool pairs = (N & 1) == 0 && (sizeof(T) == 4 || (reinterpret_cast<uintptr_t>(C) & 3) == 0);
#pragma unroll
    for (int j = 0; j < BN_W / 8; ++j) {
        const int c = cb + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = r + 8 * h;
            if (row >= M || c >= N)
                continue;
            float v0 = alpha * d[4 * j + 2 * h];
            float v1 = alpha * d[4 * j + 2 * h + 1];
            T* p = C + (size_t)row * N + c;
            if (pairs) {  // c is even, so c < N implies c + 1 < N
                if (beta != 0.0f) {
                    const float2 o = load_pair(p);
                    v0 += beta * o.x;
                    v1 += beta * o.y;
                }
                store_pair(p, v0, v1);
            } else {
                if (beta != 0.0f)
                    v0 += beta * static_cast<float>(p[0]);
                p[0] = T(v0);
                if (c + 1 < N) {
                    if (beta != 0.0f)
                        v1 += beta * static_cast<float>(p[1]);
                    p[1] = T(v1);
                }
            }
        }
    }
}

// ---- epilogue for rows of C off the 32-byte grid (h6-h10) ----
// With N % 8 != 0 a row of fp32 C does not start on a 32-byte sector, so each 32-byte piece store_acc writes
// (4 lanes x 2 floats) straddles two sectors: twice the sectors, all partial. On the H100 (h6, 4096 x N x 1024,
// where writing the 64 MB of C dominates) N = 4097 ran at 42% and N = 4098 at 60% of N = 4096; an odd M cost
// nothing. TMA's bulk store cannot take such rows (its row stride must be a multiple of 16 bytes). So each warp
// stages its 16 rows through its own shared-memory slice, 32 columns at a time, and writes each row of the chunk
// with one instruction of 32 lanes x 4 bytes: 128 contiguous bytes, 5 sectors at most, instead of 8 rows of
// 2 half-sectors each. EPI_PITCH = 40 floats: a half-warp's float2 writes (4 rows x 4 lanes) then start at rows
// 0, 8, 16, 24 words apart (40 mod 32 = 8) and cover the 32 banks once; a pitch of 36 would put rows 0 and 1 on
// overlapping banks (2-way conflicts).
constexpr int EPI_PITCH = 40;                          // floats per staged row
constexpr int EPI_WARP_BYTES = 16 * EPI_PITCH * 4;     // one warp's slice: 16 rows, 2560 bytes
constexpr int EPI_WARPGROUP_BYTES = 4 * EPI_WARP_BYTES;  // a consumer warpgroup's 4 warps: 10240 bytes

// store_acc where rows of C start on 32-byte sectors (N % 8 == 0 and C 32-byte aligned: the code and SASS of
// that path are store_acc's); the staged path otherwise. `scratch` is the warpgroup's EPI_WARPGROUP_BYTES of
// shared memory; with beta == 0 C is never read.
// A build for one shape whose rows start on sectors (N % 8 == 0; the spec's `specialize` sets ROWS_ON_SECTORS=1)
// compiles store_acc alone: less code to fetch, which counts in a kernel of a few microseconds (h8 at 1024^3 spent a
// third of its warps' stalls on instruction fetch). store_acc is correct at any N for C 8-byte aligned.
template <int BN_W>
__device__ __forceinline__ void store_acc_rows(const float (&d)[BN_W / 2], int M, int N, float alpha, float beta,
                                               float* __restrict__ C, int row0, int col0, int wg_tid,
                                               float* scratch)
{
    static_assert(BN_W % 8 == 0 && BN_W >= 32, "whole n8 blocks, one 32-column chunk at least");
#if defined(ROWS_ON_SECTORS) && ROWS_ON_SECTORS
    store_acc<BN_W>(d, M, N, alpha, beta, C, row0, col0, wg_tid);
    return;
#endif
    if ((N & 7) == 0 && (reinterpret_cast<uintptr_t>(C) & 31) == 0) {
        store_acc<BN_W>(d, M, N, alpha, beta, C, row0, col0, wg_tid);
        return;
    }
    const int warp = wg_tid >> 5;
    const int lane = wg_tid & 31;
    float* s = scratch + warp * (EPI_WARP_BYTES / 4);
    float* s_acc = s + (lane >> 2) * EPI_PITCH + 2 * (lane & 3);  // where this lane's accumulators go
    const int r0 = row0 + warp * 16;
#pragma unroll
    for (int chunk = 0; chunk < (BN_W + 31) / 32; ++chunk) {
        const int first = min(32 * chunk, BN_W - 32);  // a width off 32: the last chunk is the tile's last 32 columns
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int j = first / 8 + jj;
            *reinterpret_cast<float2*>(s_acc + 8 * jj) = make_float2(alpha * d[4 * j], alpha * d[4 * j + 1]);
            *reinterpret_cast<float2*>(s_acc + 8 * EPI_PITCH + 8 * jj) =
                make_float2(alpha * d[4 * j + 2], alpha * d[4 * j + 3]);
        }
        __syncwarp();
        const int c = col0 + first + lane;
        const bool mine = first + lane >= 32 * chunk;  // columns the chunk before wrote are not written again (beta)
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const int row = r0 + i;
            if (mine && row < M && c < N) {
                float v = s[i * EPI_PITCH + lane];
                float* p = C + (size_t)row * N + c;
                if (beta != 0.0f)
                    v += beta * *p;
                *p = v;
            }
        }
        __syncwarp();  // the slice is read before the next chunk overwrites it
    }
}

// ---- epilogue through shared memory and TMA stores (h12, h8) ----
// A consumer warpgroup's 64 x BN_W accumulator tile (rows row0.., columns col0..) to C by TMA stores: 32 columns at a
// time (one 128-byte row of fp32 per tile row) into one of BUFS staging buffers of 8 KiB at `bufs` (1024-byte
// aligned), written with the 128-byte swizzle the tensor map of C reads them with (16-byte chunk c of row r at c ^ (r
// % 8)), then handed to the copy engine, which clips rows and columns past M and N. In a half-warp's 64-bit writes,
// rows r and r ^ 1 would land on the same four chunks (a 2-way bank conflict on every write), so threads of odd rows
// write their n8 blocks in the order 2, 3, 0, 1: each write instruction covers all eight chunks. Only thread 0 of the
// warpgroup issues and waits on the stores (bulk groups are per thread): before a buffer is written again, the store
// that last read it (BUFS stores ago) must be past it. `stores` counts the warpgroup's stores so far (the buffers
// take turns across tiles); the last ones are left in flight (the kernel waits for them before it exits:
// bulk_wait<0>). `bar_id`: the warpgroup's named barrier. A width that is not a multiple of 32 (h12's fitted widths)
// ends with a store of the tile's last 32 columns, which overlaps the one before: those columns are written twice
// with the same values, by stores of this tile alone.
constexpr int TMA_EPI_COLS = 32;
constexpr uint32_t TMA_EPI_BUF_BYTES = 64 * TMA_EPI_COLS * 4;

template <int BN_W, int BUFS>
__device__ __forceinline__ void store_acc_tma(const float (&d)[BN_W / 2], float alpha, const CUtensorMap* tmap_c,
                                              int row0, int col0, int wg_tid, uint32_t bufs, int bar_id, int& stores)
{
    static_assert(BN_W % 8 == 0 && BN_W >= TMA_EPI_COLS, "whole n8 blocks, one 32-column store at least");
    const int warp = wg_tid >> 5;
    const int lane = wg_tid & 31;
    const int r = warp * 16 + (lane >> 2);  // this thread's first row in the warpgroup's 64
    const uint32_t half = (lane & 1) * 8;   // its float2 within the 16-byte chunk
    const bool odd = (lane >> 2) & 1;       // an odd row: n8 blocks in the order 2, 3, 0, 1
#pragma unroll
    for (int q = 0; q < (BN_W + TMA_EPI_COLS - 1) / TMA_EPI_COLS; ++q, ++stores) {
        const int first = min(q * TMA_EPI_COLS, BN_W - TMA_EPI_COLS);  // the store's first column in the tile
        const uint32_t buf = bufs + (stores % BUFS) * TMA_EPI_BUF_BYTES;
        if (wg_tid == 0)
            bulk_wait_read<BUFS - 1>();
        warpgroup_sync(bar_id);
#pragma unroll
        for (int t = 0; t < TMA_EPI_COLS / 8; ++t) {
            const int jj = odd ? t ^ 2 : t;                     // this thread's n8 block of the 32 columns
            const int j = first / 8 + t;                        // the accumulators' block t (and t ^ 2)
            const int j2 = first / 8 + (t ^ 2);
            const uint32_t chunk = 2 * jj + ((lane & 3) >> 1);  // 16-byte chunk of the 128-byte row
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = r + 8 * h;
                const uint32_t addr = buf + row * 128 + ((chunk ^ (row & 7)) << 4) + half;
                const float v0 = odd ? d[4 * j2 + 2 * h] : d[4 * j + 2 * h];
                const float v1 = odd ? d[4 * j2 + 2 * h + 1] : d[4 * j + 2 * h + 1];
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(alpha * v0), "f"(alpha * v1)
                             : "memory");
            }
        }
        fence_proxy_async_smem();
        warpgroup_sync(bar_id);
        if (wg_tid == 0) {
            tma_store_2d(tmap_c, buf, col0 + first, row0);
            bulk_commit();
        }
    }
}

// store_acc_tma for a half-precision C: 64 columns per store (one 128-byte row of T per tile row), through the same
// 8 KiB staging buffers with the same 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8)). A thread's pair of
// columns of n8 block t is 4 bytes of chunk t: for each write, the 32 lanes of a warp cover the 8 rows' chunks (one
// per row, each at another position after the swizzle) and the 4 words of each, the 32 banks once. A width that is
// not a multiple of 64 ends with a store of the tile's last 64 columns (written twice, with the same values).
constexpr int TMA_EPI_HALF_COLS = 64;

template <int BN_W, int BUFS, typename T>
__device__ __forceinline__ void store_acc_tma_half(const float (&d)[BN_W / 2], float alpha, const CUtensorMap* tmap_c,
                                                   int row0, int col0, int wg_tid, uint32_t bufs, int bar_id,
                                                   int& stores)
{
    static_assert(BN_W % 8 == 0 && BN_W >= TMA_EPI_HALF_COLS, "whole n8 blocks, one 64-column store at least");
    static_assert(64 * TMA_EPI_HALF_COLS * sizeof(T) == TMA_EPI_BUF_BYTES, "one store fills one staging buffer");
    const int warp = wg_tid >> 5;
    const int lane = wg_tid & 31;
    const int r = warp * 16 + (lane >> 2);
#pragma unroll
    for (int q = 0; q < (BN_W + TMA_EPI_HALF_COLS - 1) / TMA_EPI_HALF_COLS; ++q, ++stores) {
        const int first = min(q * TMA_EPI_HALF_COLS, BN_W - TMA_EPI_HALF_COLS);
        const uint32_t buf = bufs + (stores % BUFS) * TMA_EPI_BUF_BYTES;
        if (wg_tid == 0)
            bulk_wait_read<BUFS - 1>();
        warpgroup_sync(bar_id);
#pragma unroll
        for (int t = 0; t < TMA_EPI_HALF_COLS / 8; ++t) {
            const int j = first / 8 + t;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = r + 8 * h;
                const uint32_t addr = buf + row * 128 + ((t ^ (row & 7)) << 4) + (lane & 3) * 4;
                const uint32_t pair = pack_half2<T>(alpha * d[4 * j + 2 * h], alpha * d[4 * j + 2 * h + 1]);
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pair) : "memory");
            }
        }
        fence_proxy_async_smem();
        warpgroup_sync(bar_id);
        if (wg_tid == 0) {
            tma_store_2d(tmap_c, buf, col0 + first, row0);
            bulk_commit();
        }
    }
}

// Block rasterization: consecutive tile ids walk GROUP_M block rows down M before moving along N, so
// tiles running at the same time share panels of A and B in L2.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    const int per_group = group_m * tiles_n;
    const int group = tile / per_group;
    const int first_m = group * group_m;
    const int rows = min(tiles_m - first_m, group_m);
    const int in_group = tile - group * per_group;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
}

// The tile (tm, tn) of cluster rank `rank` (rank = m * CN + n: row m, column n of its cluster) in cluster tile
// `ctile`, for CTAs in clusters of CM x CN that compute neighbouring tiles (h7, h9): the grouped order above over
// cluster tiles of (CM * BM) x (CN * BN), group_m cluster rows at a time, then the CTA's place in its cluster.
template <int CM, int CN>
__device__ __forceinline__ void cluster_tile_coords(int ctile, int ctiles_m, int ctiles_n, int group_m, uint32_t rank,
                                                    int& tm, int& tn)
{
    tile_coords(ctile, ctiles_m, ctiles_n, group_m, tm, tn);
    tm = tm * CM + (int)(rank / CN);
    tn = tn * CN + (int)(rank % CN);
}

// ---- flags between CTAs of one launch (h8's, h10's and h11's ordered reductions) ----
__device__ __forceinline__ unsigned load_acquire_gpu(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release_gpu(unsigned* p, unsigned v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// A barrier of the consumer warpgroups only (named barrier 1, THREADS of them): the producer warpgroup has left
// its loop, or exited, by the time the consumers reach the epilogue, so __syncthreads (barrier 0) would hang.
template <int THREADS>
__device__ __forceinline__ void consumers_sync()
{
    asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory");
}

// ---- split-K's serial reduction in C (h8, h11) ----
// Slice s of a tile adds its part to C after slices 0 .. s-1: it waits until the tile's flag says s (the leader's
// acquire, then the consumers' barrier, so every consumer's reads of C follow it), stores (slice 0: alpha * acc +
// beta * C; the others add alpha * acc), and hands the tile on: the barrier (every consumer's stores issued), then
// the leader's fence and release of s + 1, or 0 from the last slice, so the next launch finds the flags clear.
template <int THREADS>
__device__ __forceinline__ void split_k_wait_turn(const unsigned* flag, int slice, bool leader)
{
    if (slice > 0) {
        if (leader)
            while (load_acquire_gpu(flag) != (unsigned)slice)
                __nanosleep(64);
        consumers_sync<THREADS>();
    }
}

template <int THREADS>
__device__ __forceinline__ void split_k_pass_turn(unsigned* flag, int slice, int slices, bool leader)
{
    consumers_sync<THREADS>();
    if (leader) {
        __threadfence();
        store_release_gpu(flag, slice + 1 == slices ? 0u : (unsigned)(slice + 1));
    }
}
