// Three deliberately wrong fp32 GEMMs (row-major, one thread per element of C) for the verification tests.
// Non-const A and B pointers on purpose: gemmprof builds any kernel taking the eight standard arguments.

__device__ float dot_row_col(int N, int K, float* A, float* B, int row, int col) {
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  return acc;
}

// Skips the last column of C: those elements are never written.
extern "C" __global__ void skips_last_column(int M, int N, int K, float alpha, float* A, float* B, float beta,
                                             float* C) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N - 1) C[row * N + col] = alpha * dot_row_col(N, K, A, B, row, col);
}

// Right values, but reads C even when beta == 0 (alpha*acc + beta*C unconditionally, as many public kernels do).
template <int UNUSED>
__global__ void reads_c_always(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) C[row * N + col] = alpha * dot_row_col(N, K, A, B, row, col) + beta * C[row * N + col];
}

// Writes every element, but drops the last term of the dot product: wrong values everywhere.
extern "C" __global__ void wrong_values(int M, int N, int K, float alpha, float* A, float* B, float beta,
                                        float* C) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) C[row * N + col] = alpha * dot_row_col(N, K - 1, A, B, row, col);
}
