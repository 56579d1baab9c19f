"""gemmprof: profile, verify and explain CUDA GEMM kernels."""

__version__ = "0.1.0"
