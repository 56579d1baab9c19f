"""The L2 cache between timed calls: flushed, rotated through, or left warm; and its persisting carve-out, which
survives a flush, reset before timing and watched during it.

A flush writes a buffer of twice the L2's size (evicting every normal line). Lines marked persisting (an access
policy window on a stream, inside a carve-out set by cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize)) are not
evicted by normal traffic: a kernel or function that sets one keeps its operands in L2 across the flush and reads
them at L2 speed. So before timing the carve-out is set to 0 and persisting lines are reset to normal
(cudaCtxResetPersistingL2Cache); after each variant the carve-out and the stream's access policy window are read
again, and any found is named (and undone); the card's own setting is restored at the end.

The calls go through cuda.bindings (the `cuda12`/`cuda13` extras); without it, `PersistingL2.status` says the
carve-out could not be reset.
"""

from __future__ import annotations

from collections.abc import Callable

POLICIES = {"flush": "L2 flushed before each call (a write of twice its size)",
            "rotate": "each call on the next of several input sets totalling at least twice the L2, no flush",
            "warm": "no flush: each call finds what the previous left in L2"}


class Flusher:
    """Writes twice the L2's size with one cudaMemsetAsync (as fast as the memory allows: a byte-wise fill kernel
    would idle the tensor cores longer between calls and lift the clock under a power cap)."""

    def __init__(self, l2_bytes: int):
        import cupy

        self.buf = cupy.empty(max(2 * l2_bytes, 1 << 20), dtype=cupy.uint8)

    def __call__(self):
        memset(self.buf, 0)


def memset(array, byte: int) -> None:
    """Every byte of a contiguous array set to `byte`: cudaMemsetAsync on CuPy's current stream, or NumPy's fill."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        cupy.cuda.runtime.memsetAsync(array.data.ptr, byte, array.nbytes, cupy.cuda.get_current_stream().ptr)
    else:
        array.view("uint8").fill(byte)


def rotation_sets(l2_bytes: int, set_bytes: int, most: int = 64) -> int:
    """How many input sets make a rotation where the sets a call's set waits behind total at least twice the L2 (so
    it comes back cold): 1 + ceil(2 L2 / set), two at least, `most` at most."""
    need = 1 + -(-2 * l2_bytes // max(set_bytes, 1))
    return int(min(most, max(2, need)))


def _runtime():
    try:
        from cuda.bindings import runtime
    except ImportError:
        return None
    return runtime


class PersistingL2:
    """Reset the persisting-L2 carve-out to 0 (remembering the card's value), and check it during a run."""

    def __init__(self, runtime=None, stream_ptr: Callable[[], int] | None = None):
        self.rt = runtime if runtime is not None else _runtime()
        self.stream_ptr = stream_ptr
        self.saved: int | None = None
        self._reset_tried = False
        self.status = "not reset: cuda-bindings is not installed (pip install 'gemmprof[cuda13]')" \
            if self.rt is None else "not reset"

    def _limit(self) -> int | None:
        rt = self.rt
        err, value = rt.cudaDeviceGetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize)
        return int(value) if err == rt.cudaError_t.cudaSuccess else None

    def _set(self, value: int) -> bool:
        rt = self.rt
        (err,) = _tuple(rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, value))
        return err == rt.cudaError_t.cudaSuccess

    def reset_once(self) -> None:
        """reset() before the run's first timing (cudaCtxResetPersistingL2Cache costs a few milliseconds); after
        that `findings` resets whatever a variant set."""
        if not self._reset_tried:
            self._reset_tried = True
            self.reset()

    def reset(self) -> None:
        """Carve-out to 0 and every persisting line back to normal; remembers the card's carve-out once."""
        if self.rt is None:
            return
        try:
            limit = self._limit()
            if self.saved is None:
                self.saved = limit
            ok = self._set(0) if limit else True
            (err,) = _tuple(self.rt.cudaCtxResetPersistingL2Cache())
            ok = ok and err == self.rt.cudaError_t.cudaSuccess
            self.status = "reset to 0 before timing" if ok else "reset failed"
        except Exception as exc:  # a binding without these calls: say so, time anyway
            self.status = f"not reset ({type(exc).__name__}: {exc})"

    def findings(self) -> list[str]:
        """What a variant left behind: a carve-out, or an access policy window on the timing stream (both undone)."""
        if self.rt is None:
            return []
        found = []
        try:
            limit = self._limit()
            if limit:
                found.append(f"set a persisting-L2 carve-out of {limit} bytes (cudaDeviceSetLimit): its operands "
                             "could stay in L2 across the flush")
                self.reset()
            window = self._window_bytes()
            if window:
                found.append(f"left a persisting access policy window of {window} bytes on the timing stream")
                self._clear_window()
        except Exception:  # reading failed: nothing to report
            pass
        return found

    def _window_attribute(self):
        """The access-policy-window attribute of a stream, by the name this cuda-bindings gives it (CUDA 12 made the
        stream attributes launch attributes: cudaLaunchAttributeAccessPolicyWindow)."""
        ids = self.rt.cudaStreamAttrID
        member = getattr(ids, "cudaLaunchAttributeAccessPolicyWindow", None) or \
            ids.cudaStreamAttributeAccessPolicyWindow
        return member, self.rt.cudaStreamAttrValue

    def _window_bytes(self) -> int:
        rt = self.rt
        if self.stream_ptr is None:
            return 0
        member, _ = self._window_attribute()
        err, value = rt.cudaStreamGetAttribute(self.stream_ptr(), member)
        if err != rt.cudaError_t.cudaSuccess:
            return 0
        return int(value.accessPolicyWindow.num_bytes)

    def _clear_window(self) -> None:
        member, kind = self._window_attribute()
        value = kind()
        value.accessPolicyWindow.num_bytes = 0
        self.rt.cudaStreamSetAttribute(self.stream_ptr(), member, value)

    def restore(self) -> None:
        if self.rt is not None and self.saved:
            try:
                self._set(self.saved)
            except Exception:
                pass


def _tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)
