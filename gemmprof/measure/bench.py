"""One verified variant, ready to time: its call, and what is done around each call outside the timed interval so
that no call can be answered from an earlier one and every call can be checked.

Before call i (not timed):
  - a random row of A is overwritten with fresh values (a pool of rows drawn at random, each used once, drawn
    again when used up): the call's inputs differ from every earlier call's, so output cached by input pointer or
    fingerprint is wrong;
  - with the `flush` L2 policy, the L2 is flushed; with `rotate`, call i runs on input set i mod S of S sets
    totalling at least twice the L2 (each set its own A, B and C), without a flush; `warm` does neither.
After call i (not timed):
  - on a call chosen at random for checking, C is copied aside; later it is compared with the float64 reference
    of those inputs (the original reference with row r recomputed);
  - row r of A is restored, and C is poisoned again for the set's next call, so a call that writes nothing leaves
    a wrong C: with NaN (bytes 0xFF, one cudaMemsetAsync) when beta == 0, with the finite sentinel instead for a
    kernel that reads C although beta == 0 (0 * NaN would spoil its answer), with C0 (a device copy) otherwise.

`CheckedCall` results say which timed call was wrong and how. No CUDA here beyond what the arrays bring: tests
run it on NumPy arrays.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gemmprof.measure.arrays import array_module
from gemmprof.measure.l2 import memset
from gemmprof.measure.problem import Problem, logical_c, store_c
from gemmprof.measure.verify import classify, sentinel
from gemmprof.results.run import Verification

_perf_ns = time.perf_counter_ns
POOL_ROWS = 32  # fresh rows of A per input set, drawn again each time all have been used


@dataclass
class InputSet:
    problem: Problem
    out: object  # C as the kernel writes it (stored layout, padded to ldc)
    launch: Callable[[], None]
    reset_value: object  # what C is poisoned with: NAN_BYTES, the sentinel (a host scalar) or C0 as stored
    pool: tuple  # (stored rows, float64 values)
    seed: int = 0
    used: int = 0  # pool rows written so far

    def next_row(self):
        """(a pool row as stored, its float64 values), each row once; the pool is drawn anew when used up."""
        j = self.used % len(self.pool[1])
        if j == 0 and self.used:
            self.pool = self.problem.row_pool(len(self.pool[1]), self.seed + self.used)
        self.used += 1
        return self.pool[0][j], self.pool[1][j]


@dataclass
class CheckedCall:
    index: int  # the timed call's number within the variant's timing (0 = first)
    verification: Verification

    @property
    def passed(self) -> bool:
        return self.verification.passed


@dataclass
class Bench:
    """`sets`: the input sets (one for flush and warm); `flush`: the L2 flush, or None; `c_store`: C's layout and
    leading dimension; `tolerance` and `reads_c_declared` as the first verification had them."""

    sets: list[InputSet]
    flush: Callable[[], None] | None
    c_store: tuple[str, int | None]
    tolerance: float
    reads_c_declared: bool = False
    perturb: bool = True  # False where the function's arrays are copies that would not see the new row
    rng: random.Random = field(default_factory=lambda: random.Random(random.SystemRandom().getrandbits(64)))
    checks: list[CheckedCall] = field(default_factory=list)
    host_ns: int = 0  # host time of the checks' own work: rows written and put back, C copied aside and poisoned,
    #                   the checked calls verified (the flush is the L2 policy's, not counted)
    _pending: list = field(default_factory=list)  # (call index, set, row, its float64 values, snapshot)
    _current: tuple | None = None  # (set, row, its float64 values, saved row)

    # -- around each call ----------------------------------------------------------------------------------------
    def prepare(self, i: int) -> None:
        t0 = _perf_ns()
        s = self.sets[i % len(self.sets)]
        r = values = saved = None
        if self.perturb:
            r = self.rng.randrange(s.problem.shape.M)
            stored, values = s.next_row()
            saved = s.problem.a_row(r)
            s.problem.set_a_row(r, stored)
        self._current = (s, r, values, saved)
        self.host_ns += _perf_ns() - t0
        if self.flush is not None:
            self.flush()

    def launch(self) -> None:
        self._current[0].launch()

    def finish(self, i: int, checked: bool) -> None:
        t0 = _perf_ns()
        s, r, values, saved = self._current
        if checked:
            self._pending.append((i, s, r, None if values is None else values.copy(), s.out.copy()))
        if r is not None:
            s.problem.set_a_row(r, saved)
        reset(s)
        self._current = None
        self.host_ns += _perf_ns() - t0

    def check_work(self, calls: int) -> None:
        """The device work the checks add around `calls` calls, without the calls and the flush: a row of A
        written and put back, C poisoned (the caller times it between two events: its device time per call)."""
        for i in range(calls):
            s = self.sets[i % len(self.sets)]
            if self.perturb:
                r = self.rng.randrange(s.problem.shape.M)
                saved = s.problem.a_row(r)
                s.problem.set_a_row(r, s.next_row()[0])
                s.problem.set_a_row(r, saved)
            reset(s)

    # -- the checked calls ---------------------------------------------------------------------------------------
    def verify_checked(self) -> list[CheckedCall]:
        """Compare every copied C with its inputs' reference (row r recomputed in place, then put back); the
        results also land in `checks`. Elements still NaN from the poison were never written."""
        t0 = _perf_ns()
        try:
            return self._verify_checked()
        finally:
            self.host_ns += _perf_ns() - t0

    def _verify_checked(self) -> list[CheckedCall]:
        layout, _ = self.c_store
        for i, s, r, values, snapshot in self._pending:
            p = s.problem
            saved = None
            if r is not None:
                saved = p.ref[r].copy()
                p.ref[r] = p.row_reference(r, values)
            inner = p.shape.N if layout == "row" else p.shape.M
            got = logical_c(snapshot[:, :inner], p.c_dtype, layout)
            initial = p.C0
            if p.beta == 0:
                initial = sentinel(p.c_dtype)
                xp = array_module(got)
                got = xp.where(xp.isnan(got), xp.asarray(initial, dtype=got.dtype), got)
            try:
                check = classify(got, p.ref, self.tolerance, initial=initial, reads_c_declared=self.reads_c_declared)
            finally:
                if saved is not None:
                    p.ref[r] = saved
            self.checks.append(CheckedCall(i, check))
        self._pending.clear()
        return self.checks


NAN_BYTES = 0xFF  # every byte 0xFF: NaN in fp32, fp16 and bf16 alike


def reset(s: InputSet) -> None:
    """C poisoned again for the set's next call (no work on the host's side of the stream: no sync)."""
    value = s.reset_value
    if value is NAN_BYTES:
        memset(s.out, NAN_BYTES)
    elif hasattr(value, "shape"):
        _copy(s.out, value)
    else:
        s.out.fill(value)


def reset_value(problem: Problem, out, layout: str, reads_c: bool = False):
    """What C is reset to between timed calls: NaN bytes (beta == 0: any element left unwritten shows), the finite
    sentinel as a host scalar for a kernel that reads C with beta == 0, or C0 as the kernel's layout stores it
    (beta != 0: C must be C0 for the call to be right), padded as `out` is."""
    if problem.beta == 0 and not reads_c:
        return NAN_BYTES
    if problem.beta == 0:  # a host scalar: filling with a device scalar would read it back, a sync every call
        xp = array_module(out)
        return store_c(xp.full((1, 1), sentinel(problem.c_dtype), dtype=xp.float32), problem.c_dtype, "row")[0, 0].item()
    value = out.copy()
    stored = store_c(problem.C0, problem.c_dtype, layout)
    value[:, :stored.shape[1]] = stored
    return value


def _copy(dst, src) -> None:
    """A device-to-device copy of a contiguous array (cudaMemcpyAsync on CuPy's current stream), or NumPy's."""
    if type(dst).__module__.startswith("cupy"):
        import cupy

        rt = cupy.cuda.runtime
        rt.memcpyAsync(dst.data.ptr, src.data.ptr, dst.nbytes, rt.memcpyDeviceToDevice,
                       cupy.cuda.get_current_stream().ptr)
    else:
        dst[...] = src


def input_set(problem: Problem, out, launch: Callable[[], None], layout: str, seed: int,
              reads_c: bool = False) -> InputSet:
    s = InputSet(problem, out, launch, reset_value(problem, out, layout, reads_c), problem.row_pool(POOL_ROWS, seed),
                 seed)
    reset(s)
    return s


