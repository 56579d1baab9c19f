// Helpers of sgemm_tiled.cu, found through the spec's include_dirs.
#pragma once
#ifndef TILE
#error "TILE must be defined: the spec passes defines: [TILE=16]"
#endif

// element (r, c) of a row-major rows x cols matrix, or 0 outside it
__device__ __forceinline__ float load_or_zero(const float* p, int r, int c, int rows, int cols) {
    return (r < rows && c < cols) ? p[(size_t)r * cols + c] : 0.0f;
}
