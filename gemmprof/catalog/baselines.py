"""cuBLAS baselines (SGEMM, TF32, HGEMM and bf16 with fp32 accumulate): what each is compared with and bounded by;
with an fp16 or bf16 C where a kernel writes one (cuBLAS takes a C of the inputs' half type with fp32 compute).

gemmprof.measure.cublas launches them through cublasGemmEx like any rung. Beside each, `run --cublaslt-best N`
adds cuBLASLt's best of N (`cublaslt_best`): the same problem, the heuristic's top N algorithms verified and timed,
the fastest kept (gemmprof.measure.cublaslt)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gemmprof.results.run import cublaslt_name


@dataclass(frozen=True)
class Baseline:
    name: str
    title: str
    dtype: str  # dtype of the rungs it is compared with
    storage: str  # fp32 | fp16: the problem it runs on
    tolerance_key: str
    peak_kind: str
    c_dtype: str = "fp32"  # the output's type
    b_layout: str = "row"  # how B is stored for cuBLAS: row (K x N) or col (N rows of K), as the kernels read it
    library: str = "cublas"  # cublas: cublasGemmEx's own choice of algorithm; cublaslt: the best of `candidates`
    candidates: int = 0  # cublaslt: how many of the heuristic's algorithms are tried


BASELINES = {
    "cublas_sgemm": Baseline("cublas_sgemm", "cuBLAS SGEMM (fp32)", "fp32", "fp32", "fp32", "fp32"),
    "cublas_tf32": Baseline("cublas_tf32", "cuBLAS GEMM, TF32 tensor cores", "tf32", "fp32", "tf32", "tf32_tensor"),
    "cublas_bf16": Baseline("cublas_bf16", "cuBLAS GEMM (bf16 in, fp32 accumulate)", "bf16", "bf16", "bf16",
                            "bf16_tensor_fp32_acc"),
    "cublas_hgemm": Baseline("cublas_hgemm", "cuBLAS HGEMM (fp16 in, fp32 accumulate)", "fp16", "fp16", "fp16",
                             "fp16_tensor_fp32_acc"),
}


def for_dtypes(dtypes: set[str]) -> list[Baseline]:
    out = []
    if "fp32" in dtypes:
        out += [BASELINES["cublas_sgemm"], BASELINES["cublas_tf32"]]
    if "fp16" in dtypes:
        out.append(BASELINES["cublas_hgemm"])
    if "bf16" in dtypes:
        out.append(BASELINES["cublas_bf16"])
    return out


def half_c(base: Baseline) -> Baseline:
    """The baseline writing C in its inputs' half type (cuBLAS takes such a C with fp32 compute)."""
    c_dtype = base.dtype
    return replace(base, name=f"{base.name}_c{c_dtype}", c_dtype=c_dtype, title=f"{base.title.rstrip(')')}, {c_dtype} C)")


def with_b_layout(base: Baseline, b_layout: str) -> Baseline:
    """The baseline reading B as the kernels it is compared with store it: the same problem in the same layout.
    cuBLAS's speed depends on it: with B row-major and N = 4097 its half-precision rows are not 16-byte aligned,
    and cuBLAS ran 4095 x 4097 x 1024 at a quarter of its aligned speed (benchmarks/2026-11-25_h100_sweep), where
    B column-major with K = 1024 is aligned."""
    if b_layout == base.b_layout:
        return base
    return replace(base, b_layout=b_layout, title=f"{base.title.rstrip(')')}; B {b_layout}-major)")


def cublaslt_best(base: Baseline, n: int) -> Baseline:
    """cuBLASLt's best of the heuristic's top `n` algorithms for the problem `base` runs (the same inputs, C and B
    layout, the same cuBLASLt description as cublasGemmEx builds): its own row, named after the cuBLAS row."""
    if n < 1:
        raise ValueError(f"cublaslt_best: n must be at least 1, got {n}")
    return replace(base, name=cublaslt_name(base.name, n), library="cublaslt", candidates=n,
                   title=f"cuBLASLt best of {n}: {base.title.removeprefix('cuBLAS ')}")


def by_name() -> dict[str, Baseline]:
    """Every baseline a run may hold, the half-C ones included, by name (to read results and reports back)."""
    out = dict(BASELINES)
    out.update((b.name, b) for b in map(half_c, BASELINES.values()) if b.dtype in ("fp16", "bf16"))
    return out


def for_kernels(pairs: set[tuple[str, str]]) -> list[Baseline]:
    """for_dtypes of the input dtypes, plus the baseline writing the same half-type C as a kernel that does (an
    fp32-input kernel writing half C has none: cuBLAS computes fp32 inputs into fp32 C only)."""
    out = for_dtypes({d for d, _ in pairs})
    for dtype, c_dtype in sorted(pairs):
        if c_dtype != "fp32" and c_dtype == dtype:
            out.append(half_c(next(b for b in out if b.dtype == dtype)))
    return out


# torch.matmul: a row beside cuBLAS in runs with Python callables, where torch is installed ---------------------
TORCH_MATMUL = "torch_matmul"


def torch_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def torch_matmul_name(c_dtype: str = "fp32") -> str:
    """Named like cuBLAS's rows: a half C is in the name, so two runs compare like with like."""
    return TORCH_MATMUL if c_dtype == "fp32" else f"{TORCH_MATMUL}_c{c_dtype}"


def torch_matmul_writes(dtype: str, c_dtype: str) -> bool:
    """torch.mm writes C of the inputs' dtype, or fp32 C from fp16 or bf16 inputs (out_dtype): one GEMM either way."""
    return c_dtype in ("fp32", dtype)


def torch_matmul_title(dtype: str, c_dtype: str = "fp32") -> str:
    out = f"{c_dtype} out" if dtype == c_dtype else f"{dtype} in, {c_dtype} out (out_dtype)"
    return f"torch.matmul's 2-D path, torch.mm ({out})"


def torch_matmul(A, B, C, alpha, beta):
    """C = alpha * A @ B + beta * C with torch.mm (cuBLAS underneath), written in C's dtype by the GEMM itself: the
    inputs' dtype, or fp32 from fp16 and bf16 inputs (torch.mm's out_dtype, torch >= 2.8). With alpha = 1 and
    beta = 0 the row is one GEMM, as cuBLAS's is; other alpha and beta add elementwise kernels."""
    import torch

    wide = {} if C.dtype == A.dtype else {"out_dtype": C.dtype}
    if beta == 0:
        torch.mm(A, B, out=C, **wide)
        if alpha != 1:
            C.mul_(alpha)
    else:
        C.mul_(beta).add_(torch.mm(A, B, **wide), alpha=alpha)


# cuBLASLt's fp8 GEMM through torch._scaled_mm: the baseline of fp8 variants, where torch is installed -------------
# (cupy's cublasGemmEx has no fp8; torch._scaled_mm calls cublasLtMatmul with the scales as its A and B scale
# pointers: per tensor, or per block where torch is built with CUDA >= 12.9 and the GPU is sm_90, docs/fp8.md)
def cublaslt_fp8_title(dtype: str, c_dtype: str, scales: str = "tensor", fast_accum: bool = False) -> str:
    how = {"tensor": "per-tensor scales", "1x128": "A 1x128, B 128x128 block scales",
           "128x128": "A's 128x128 block scales given as the same scale on each of the block's 128 rows (1x128: "
                      "cuBLASLt takes no 128x128 pair), B 128x128"}[scales or "tensor"]
    accum = ("all of K accumulated in the tensor cores, use_fast_accum=True" if fast_accum else
             "partial sums promoted to fp32 as it goes, torch's default use_fast_accum=False")
    return f"cuBLASLt fp8 GEMM via torch._scaled_mm ({dtype} in, {c_dtype} C, {how}; {accum})"


def cublaslt_fp8_missing(dtype: str, shape) -> str | None:
    """Why torch._scaled_mm cannot run this fp8 problem (None: it can): cuBLASLt has no e5m2 x e5m2 GEMM, and
    torch._scaled_mm takes dimensions that are multiples of 16 only."""
    if dtype == "e5m2":
        return "cuBLASLt has no e5m2 x e5m2 GEMM (its fp8 GEMMs take e4m3 in A or B)"
    odd = [f"{name} = {v}" for name, v in (("M", shape.M), ("N", shape.N), ("K", shape.K)) if v % 16]
    if odd:
        return f"torch._scaled_mm takes dimensions that are multiples of 16 ({', '.join(odd)})"
    return None


_SCALE_CACHE: dict = {}  # scale tensors rearranged for cuBLASLt once per problem (outside the timed calls' cost)


def _cached(key, make):
    if key not in _SCALE_CACHE:
        if len(_SCALE_CACHE) > 16:
            _SCALE_CACHE.clear()
        _SCALE_CACHE[key] = make()
    return _SCALE_CACHE[key]


def torch_scaled_mm(A, B, C, alpha, beta, *, scale_a, scale_b, fast_accum: bool = False):
    """C = alpha * (A * scale_a) @ (B * scale_b) + beta * C with torch._scaled_mm (cuBLASLt's fp8 GEMM), written in
    C's dtype by the GEMM itself (out=C). Scales as gemmprof hands them to a callable (docs/fp8.md): a (1,) tensor
    each, or A's (M x K/128, stride (1, M)) and B's (K/128 x N/128, stride (1, K/128)), which are the layouts
    torch._scaled_mm takes for DeepSeek's 1x128 x 128x128 recipe; A's 128 x 128 blocks are handed over as the same
    scale for each of the block's rows (rearranged once per problem). With alpha = 1 and beta = 0 the row is one
    GEMM; other alpha and beta add elementwise kernels. `fast_accum`: torch's use_fast_accum (per-tensor scales
    only): all of K accumulated in the tensor cores, as h14 does per tensor, instead of promoted as it goes."""
    import torch

    M, K = A.shape
    if scale_a.dim() == 2 and scale_a.shape[0] != M:  # A per 128 x 128 block: one scale per row of each block
        scale_a = _cached(("rows", scale_a.data_ptr(), M),
                          lambda: scale_a.repeat_interleave(128, dim=0)[:M].t().contiguous().t())
    if scale_b.dim() == 1:
        scale_a, scale_b = scale_a.reshape(()), scale_b.reshape(())

    def gemm(out=None):
        extra = ({} if out is None else {"out": out}) | ({"use_fast_accum": True} if fast_accum else {})
        return torch._scaled_mm(A, B, scale_a, scale_b, out_dtype=C.dtype, **extra)

    if beta == 0:
        gemm(C)
        if alpha != 1:
            C.mul_(alpha)
    else:
        C.mul_(beta).add_(gemm(), alpha=alpha)
