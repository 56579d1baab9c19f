"""The GEMM's value types every stage names: its shape (M, N, K) and a kernel's tile sizes.

They live in results, the lowest stage, because run and profile results record shapes and the catalog binds
tiles; the model (gemmprof.model.traffic) computes with them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gemmprof.errors import InputError

MAX_DIMENSION = 2 ** 31 - 1  # CUDA grids and int32 indexing: larger GEMMs are typing mistakes


@dataclass(frozen=True)
class GemmShape:
    M: int
    N: int
    K: int

    def __post_init__(self):
        for name in ("M", "N", "K"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_DIMENSION:
                raise InputError(f"{name}: {str(v)[:40]!r} is not a valid dimension (must be an integer from 1 "
                                 f"to {MAX_DIMENSION})")

    @property
    def label(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"

    def to_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class Tiles:
    """The tile sizes of a rung's traffic model (from its spec's `traffic:` block)."""

    BM: int = 1  # block tile rows (1: no reuse through shared memory)
    BN: int = 1
    TM: int = 1  # results per thread along M (register tile)
    TN: int = 1
    smem: bool = False

    def __post_init__(self):
        for name in ("BM", "BN", "TM", "TN"):
            if getattr(self, name) < 1:
                raise InputError(f"--{name.lower()}: tile sizes must be >= 1")
