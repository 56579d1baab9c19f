"""The kernel variants the harness builds and runs: source, entry, -D defines and launch geometry."""

VARIANTS = [
    # name, source, entry, defines, BM, BN, threads, stages, persistent[, cluster]
    ("h4", "h4_wgmma_tma.cu", "hgemm_wgmma_tma", {"BM": 128, "BN": 128, "STAGES": 3}, 128, 128, 128, 3, False),
    ("h5", "h5_warp_specialized.cu", "hgemm_warp_specialized", {"BN": 256, "STAGES": 4}, 128, 256, 384, 4, False),
    ("h6", "h6_persistent.cu", "hgemm_persistent", {"BN": 256, "STAGES": 4, "GROUP_M": 16}, 128, 256, 384, 4, True),
    ("h6g8", "h6_persistent.cu", "hgemm_persistent", {"BN": 256, "STAGES": 4, "GROUP_M": 8}, 128, 256, 384, 4, True),
    ("h7", "h7_cluster_multicast.cu", "hgemm_cluster_multicast", {"BN": 256, "STAGES": 4}, 128, 256, 384, 4, True,
     (2, 1, 1)),
]


def smem_bytes(bm, bn, stages):
    return stages * (bm + bn) * 64 * 2 + 1024  # + 1024 to align the tiles to 1024 bytes
