"""What a kernel did to C, told apart by two launches: over NaN-poisoned C and over a finite sentinel.

A pure function of arrays (NumPy or CuPy), so every verdict is testable without a GPU:
  - never written: the element still holds the sentinel after the launch over the sentinel;
  - reads C although beta == 0: NaN over the poison (0 * NaN = NaN) but written, and finite, over the sentinel;
  - wrong: written, C finite, and off the float64 reference by more than the tolerance (relative to the RMS of
    the reference, the per-element counterpart of ||out - ref|| / ||ref||).
"""

from __future__ import annotations

from gemmprof.measure.arrays import array_module
from gemmprof.results.run import Verification

# finite, far from any value a GEMM of inputs in [-1, 1) can produce, and 0 * SENTINEL == 0
SENTINEL = 1.0e30
# the same in an fp16 or bf16 C: exactly representable there and in float32, far beyond |K * alpha|'s usual range
SENTINELS = {"fp32": SENTINEL, "fp16": 30000.0, "bf16": 2.0 ** 99}


def sentinel(c_dtype: str = "fp32") -> float:
    return SENTINELS[c_dtype]


def _first(xp, mask, ncols: int) -> tuple[int, int] | None:
    if not bool(mask.any()):
        return None
    i = int(xp.argmax(mask.ravel()))
    return (i // ncols, i % ncols)


def classify(out, ref, tolerance: float, *, initial, poisoned=None, reads_c_declared: bool = False) -> Verification:
    """out: C after the launch over a finite `initial` C (SENTINEL when beta == 0, C0 otherwise, scalar or array);
    poisoned: C after the launch over NaN (beta == 0 only); ref: the float64 reference."""
    xp = array_module(out)
    out64 = out.astype(xp.float64)
    ref = ref.astype(xp.float64)
    init = xp.asarray(initial, dtype=out.dtype).astype(xp.float64)  # compare in the stored precision
    ncols = out.shape[-1] if out.ndim else 1
    size = max(int(ref.size), 1)
    denom = float(xp.linalg.norm(ref))
    rms = denom / size ** 0.5
    # an element that kept its initial value was never stored, unless the right answer is that value within the
    # tolerance: a half-precision C (or a product rounded to half) lands exactly on C0 for a few elements in a
    # million when beta != 0, and those were written correctly
    with _quiet(xp):
        unwritten = (out64 == init) & (xp.abs(ref - init) > tolerance * rms)
    written = ~unwritten
    reads_c = xp.zeros(out.shape, dtype=bool)
    if poisoned is not None:
        reads_c = xp.isnan(poisoned) & written & xp.isfinite(out64)
    with _quiet(xp):
        diff = xp.abs(out64 - ref)
        wrong = written & (~xp.isfinite(out64) | (diff > tolerance * rms))
        off = float(xp.linalg.norm(xp.where(written, out64 - ref, 0.0)))
        # an all-zero reference (inputs of zeros): right only where the output is exactly zero too
        err = off / denom if denom else (0.0 if off == 0 else float("inf"))
    n_unwritten, n_wrong = int(unwritten.sum()), int(wrong.sum())
    if n_unwritten:
        err = float("inf")
    worst = unwritten if n_unwritten else wrong if n_wrong else reads_c
    return Verification(rel_error=err, tolerance=tolerance, unwritten=n_unwritten, reads_c=int(reads_c.sum()),
                        wrong=n_wrong, first_bad=_first(xp, worst, ncols), reads_c_declared=reads_c_declared)


class _quiet:
    """NumPy warns on inf - inf; the verdict already counts such elements."""

    def __init__(self, xp):
        self.xp, self.state = xp, None

    def __enter__(self):
        if hasattr(self.xp, "seterr"):
            self.state = self.xp.seterr(all="ignore")

    def __exit__(self, *exc):
        if self.state is not None:
            self.xp.seterr(**self.state)
