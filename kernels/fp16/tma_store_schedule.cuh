// The schedule h12 and h14 share (h14 is h12 on fp8 operands): 2 x 1 clusters sharing B, tile rows grouped GROUP_M at
// a time, and EPI_BUFS staging buffers per consumer warpgroup for the TMA-store epilogue. Included after the
// rung's parameters (BN, CLUSTER_M, GROUP_M, EPI_BUFS) are defined; hopper.cuh before it.
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
