// gemmprof host launcher for kernel 12 of pranjalssh/fast.cu (MIT). Its header matmul_12.cuh is not in this tree:
// scripts/fetch_public_kernel.py fetches it at the pinned commit (hash-checked) into gemmprof's cache, which the
// spec's include_dirs names (README.md). It is included unchanged; this file supplies what fast.cu's matmul.cu
// defines before including it and replaces its runKernel12 with a launcher that takes gemmprof's stream and
// caches its host-side setup.
//
// C = A * B, bf16 in, fp32 accumulation, bf16 out:
//   A: M x K row-major            (tensor map create_tensor_map<BM, BK>(A, M, K): M rows of K)
//   B: K x N column-major         (create_tensor_map<BN, BK>(B, N, K): N rows of K)
//   C: M x N column-major, ldc=M  (create_tensor_map<BN, BM/NUM_CONSUMERS, false, true>(C, N, M): N rows of M)

// fast.cu's Makefile builds with -DNDEBUG, and the header needs it: createHilbert's assert(loc < SPACE_LEN) names
// no variable `loc`, so the header does not compile with assertions on. (The spec passes -DNDEBUG=1 as well.)
#ifndef NDEBUG
#define NDEBUG 1
#endif

// The includes of fast.cu's matmul.cu that the header uses (cuBLAS, <cuda/barrier>, <random>... are not needed).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cassert>   // included after NDEBUG: assert() is compiled out, as in fast.cu's build
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

// As in matmul.cu; only runKernel12 (never called here) uses it.
void cudaCheck(cudaError_t error, const char *file, int line) {
  if (error != cudaSuccess) {
    printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
    exit(1);
  }
}
#define cudaCheck(err) (cudaCheck(err, __FILE__, __LINE__))

// cuTensorMapEncodeTiled is a driver API function. fast.cu links it with -lcuda; that needs libcuda.so (the driver's,
// or the toolkit's stubs/libcuda.so) at link time, which the build machine here lacks (`ld: cannot find -lcuda`).
// So the header's calls are routed, by a macro, to the same driver function looked up at run time
// through the CUDA runtime (cudaGetDriverEntryPointByVersion); the header's text stays unchanged. A failed encode
// is recorded, since the header's assert(result == CUDA_SUCCESS) is compiled out.
static CUresult g_encode_status = CUDA_SUCCESS;  // the first failure since the last reset
static CUresult fastcu12_encode_tiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr,
                                      const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *box,
                                      const cuuint32_t *estrides, CUtensorMapInterleave interleave,
                                      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                      CUtensorMapFloatOOBfill oob) {
  typedef CUresult (*Encode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                             const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                             CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = nullptr;
  if (encode == nullptr) {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr) {
      if (g_encode_status == CUDA_SUCCESS) g_encode_status = CUDA_ERROR_NOT_FOUND;
      return CUDA_ERROR_NOT_FOUND;
    }
    encode = reinterpret_cast<Encode>(fn);
  }
  CUresult r = encode(map, type, rank, addr, dim, strides, box, estrides, interleave, swizzle, l2, oob);
  if (r != CUDA_SUCCESS && g_encode_status == CUDA_SUCCESS) g_encode_status = r;
  return r;
}
#define cuTensorMapEncodeTiled fastcu12_encode_tiled

#include "matmul_12.cuh"  // fast.cu commit 38eb642e0c081231d6f695978be63604bd7c689b, unchanged (fetched)

#undef cuTensorMapEncodeTiled

namespace {

// runKernel12's configuration, unchanged.
constexpr int BM = 128;
constexpr int BN = 256;
constexpr int BK = 64;
constexpr int NUM_THREADS = 128 * 3;
constexpr int QSIZE = 3;
constexpr int CLUSTER_M = 2;
constexpr int CLUSTER_N = 1;
constexpr int NUM_SM = 128;
constexpr int NUM_CONSUMERS = (NUM_THREADS / 128) - 1;
static_assert(NUM_SM % (CLUSTER_M * CLUSTER_N) == 0);

constexpr size_t kSmemBytes = sizeof(M12::SMem<BM, BN, BK, QSIZE>);
static_assert(kSmemBytes < 256 * 1024);

struct MapKey {
  const void *A, *B, *C;
  int M, N, K;
  bool operator==(const MapKey &o) const {
    return A == o.A && B == o.B && C == o.C && M == o.M && N == o.N && K == o.K;
  }
};

bool g_have_maps = false;
MapKey g_map_key{};
CUtensorMap g_map_A, g_map_B, g_map_C;

bool g_have_schedule = false;
int g_sched_M = 0, g_sched_N = 0;
int *g_dspace = nullptr;                 // NUM_SM * SPACE_LEN ints on the device, allocated once
std::vector<int> g_space;                // its host copy

bool g_smem_set = false;

}  // namespace

// gemmprof calls this through ctypes: args [M, N, K, A, B, C, stream].
extern "C" int fastcu12(int M, int N, int K, const void *A, const void *B, void *C, cudaStream_t stream) {
  auto *kernel = M12::matmulKernel12<BM, BN, BK, NUM_THREADS, QSIZE, NUM_SM, CLUSTER_M, CLUSTER_N>;

  // Shapes the kernel cannot run (the spec's shape_constraints refuse them first). With NDEBUG the header's own
  // asserts are gone, so a bad shape would otherwise give a bad tensor map or overflow the schedule silently.
  const int tiles_m = CEIL_DIV(M, BM * CLUSTER_M), tiles_n = CEIL_DIV(N, BN * CLUSTER_N);
  const int clusters = NUM_SM / CLUSTER_M / CLUSTER_N;
  if (M <= 0 || N <= 0 || K <= 0 || K % BK != 0 || M % 64 != 0 || (M / BM) % CLUSTER_M != 0 ||
      (tiles_m < 2 && tiles_n < 2) || (long long)tiles_m * tiles_n > (long long)clusters * M12::SPACE_LEN) {
    return (int)cudaErrorInvalidValue;
  }

  if (!g_smem_set) {  // once, not on every call as runKernel12 does
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmemBytes);
    if (err != cudaSuccess) return (int)err;
    g_smem_set = true;
  }

  // The Hilbert schedule depends on M and N only: rebuilt when they change, copied in stream order (kernels still
  // queued on `stream` read the old one first).
  if (!g_have_schedule || g_sched_M != M || g_sched_N != N) {
    if (g_dspace == nullptr) {
      cudaError_t err = cudaMalloc((void **)&g_dspace, sizeof(int) * NUM_SM * M12::SPACE_LEN);
      if (err != cudaSuccess) { g_dspace = nullptr; return (int)err; }
    }
    g_space.assign((size_t)NUM_SM * M12::SPACE_LEN, -1);
    M12::createHilbert(tiles_m, tiles_n, clusters, g_space.data());
    cudaError_t err = cudaMemcpyAsync(g_dspace, g_space.data(), sizeof(int) * NUM_SM * M12::SPACE_LEN,
                                      cudaMemcpyHostToDevice, stream);
    if (err != cudaSuccess) return (int)err;
    g_sched_M = M, g_sched_N = N, g_have_schedule = true;
  }

  // The tensor maps (passed by value to the kernel) are re-encoded when a pointer or the shape changes.
  const MapKey key{A, B, C, M, N, K};
  if (!g_have_maps || !(g_map_key == key)) {
    g_have_maps = false;
    g_encode_status = CUDA_SUCCESS;
    g_map_A = M12::create_tensor_map<BM, BK>((bf16 *)A, M, K);
    g_map_B = M12::create_tensor_map<BN, BK>((bf16 *)B, N, K);
    g_map_C = M12::create_tensor_map<BN, BM / NUM_CONSUMERS, false, true>((bf16 *)C, N, M);
    if (g_encode_status != CUDA_SUCCESS) {
      fprintf(stderr, "fastcu12: cuTensorMapEncodeTiled failed (CUresult %d) at M=%d N=%d K=%d\n",
              (int)g_encode_status, M, N, K);
      return 1000 + (int)g_encode_status;  // non-zero: gemmprof fails the variant
    }
    g_map_key = key, g_have_maps = true;
  }

  // The kernel's cluster shape is compile-time (__cluster_dims__(CLUSTER_M * CLUSTER_N, 1, 1)), so <<<>>> launches
  // 2-CTA clusters, exactly as runKernel12 does; only the stream is new.
  kernel<<<NUM_SM, NUM_THREADS, kSmemBytes, stream>>>(M, N, K, g_map_C, g_map_A, g_map_B, g_dspace);
  return (int)cudaPeekAtLastError();  // peek: gemmprof reads (and clears) the error itself to name it
}
