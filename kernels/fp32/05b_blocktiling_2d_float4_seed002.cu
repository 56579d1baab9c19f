// Rung 5b: 2D blocktiling as seeds 000/002 write it (regSgemm ver2): 128x128 block tile,
// BK = 8, a 16x16 thread block, each thread an 8x8 tile of C. Each thread stages one float4
// of A and one of B per K step (global loads are 128-bit); s_a keeps A's layout
// [BM][BK] (not transposed), so the compute loop reads it with scalar loads.
// No bounds checks: the spec requires M % 128 == 0, N % 128 == 0, K % 8 == 0.
// Credit: our implementation of seed 002's regSgemm ver2 (register tiling after seed 000's "from SMEM to
//   registers").

__global__ void __launch_bounds__(256)
sgemm_blocktiling_2d_float4(int M, int N, int K, float alpha,
                            const float* __restrict__ A,
                            const float* __restrict__ B, float beta,
                            float* __restrict__ C) {
  constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  __shared__ __align__(16) float s_a[BM][BK];
  __shared__ __align__(16) float s_b[BK][BN];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * blockDim.x + tx;

  // 256 threads x 4 floats = 128x8 = 8x128: one float4 of each operand per thread.
  const int a_m = tid >> 1;         // row of s_a
  const int a_k = (tid & 1) << 2;   // 0 or 4
  const int b_k = tid >> 5;         // row of s_b
  const int b_n = (tid & 31) << 2;  // 0, 4, ..., 124

  const float* a_ptr = A + (blockIdx.y * BM + a_m) * K + a_k;
  const float* b_ptr = B + b_k * N + blockIdx.x * BN + b_n;

  float r_c[TM][TN];
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) r_c[m][n] = 0.0f;

  for (int bk = 0; bk < K; bk += BK) {
    *reinterpret_cast<float4*>(&s_a[a_m][a_k]) = *reinterpret_cast<const float4*>(a_ptr + bk);
    *reinterpret_cast<float4*>(&s_b[b_k][b_n]) =
        *reinterpret_cast<const float4*>(b_ptr + bk * N);
    __syncthreads();

#pragma unroll
    for (int k = 0; k < BK; ++k)
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n)
          r_c[m][n] += s_a[ty * TM + m][k] * s_b[k][tx * TN + n];
    __syncthreads();
  }

#pragma unroll
  for (int m = 0; m < TM; ++m) {
    float* c_row = C + (blockIdx.y * BM + ty * TM + m) * N + blockIdx.x * BN + tx * TN;
#pragma unroll
    for (int n = 0; n < TN; n += 4) {
      float4 v = make_float4(alpha * r_c[m][n], alpha * r_c[m][n + 1],
                             alpha * r_c[m][n + 2], alpha * r_c[m][n + 3]);
      if (beta != 0.0f) {
        const float4 c = *reinterpret_cast<const float4*>(c_row + n);
        v.x += beta * c.x; v.y += beta * c.y; v.z += beta * c.z; v.w += beta * c.w;
      }
      *reinterpret_cast<float4*>(c_row + n) = v;
    }
  }
}
