"""Compile ahead: every selected kernel's nvcc build is started at once in a pool, and whoever launches a kernel
waits only for that kernel's build (`run`, `profile`, `build`; `tune` sizes its process pool the same way).

Real builds run in a pool of spawned processes, as `tune`'s do: nvcc is a process of its own anyway, and the
Python around it (the cache, reading ptxas's log and the SASS listing) then never holds the measuring process's
GIL between two timed launches. Stand-in compilers (tests) run in threads. Builds are
submitted in the order the kernels will be measured: the GPU starts on the first kernel as soon as it is built
while the rest still compile, and never waits for a build it could have had earlier. A build that fails, or
raises, is that kernel's failure alone: `get` answers None and the runner builds it again itself, in line, to
report the error in that kernel's row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from gemmprof.measure.build import BuildResult, builds_for, nvcc_build
from gemmprof.measure.nvcc import nvcc_path
from gemmprof.measure.pools import default_jobs, process_pool, thread_pool

if TYPE_CHECKING:
    from gemmprof.catalog.binding import BoundKernel


class CompileAhead:
    """Builds started now, collected later: `get(kernel)` waits for that kernel's build only.

    `build(kernel, arch)` is `measure.build.nvcc_build` (tests pass stand-ins); `arch` is the device's exact arch.
    """

    def __init__(self, kernels: Iterable[BoundKernel], arch: str, build: Callable | None = None,
                 jobs: int | None = None):
        processes = build is None  # the real build in processes; a stand-in (not picklable, say) in threads
        unique: dict[tuple, BoundKernel] = {}
        for k in kernels:  # a kernel timed with two compilers, or listed twice, is built once
            unique.setdefault(k.binary_key, k)
        self.kernels = list(unique.values())
        self._futures: dict[tuple, Future] = {}  # by binary_key: the runner asks with its own BoundKernel
        todo = self.kernels  # the builds to run; the rest are read from the cubin cache when asked for
        if build is None:
            build, todo = nvcc_build, self._take_cached(arch)
        self.cached = len(self.kernels) - len(todo)
        self.jobs = max(1, min(jobs or default_jobs(), len(todo) or 1))
        pool = process_pool if processes else thread_pool
        self._pool = pool(self.jobs) if todo else None
        for k in longest_first(todo) if processes else todo:
            self._futures[k.binary_key] = self._pool.submit(build, k, arch)

    def _take_cached(self, arch: str) -> list[BoundKernel]:
        """Builds the cubin cache already holds are read here, when asked for (milliseconds, no process to
        start); the rest are returned to be compiled."""
        from gemmprof.measure.nvcc import is_cached

        todo = []
        for k in self.kernels:
            try:
                cached = is_cached(k, arch)
            except Exception:  # noqa: BLE001 - no nvcc, an unreadable source: the build reports it
                cached = False
            if cached:
                self._futures[k.binary_key] = _Lazy(nvcc_build, k, arch)
            else:
                todo.append(k)
        return todo

    def __len__(self) -> int:
        return len(self._futures)

    def get(self, kernel: BoundKernel):
        """The kernel's BuildResult once it is ready; None if it was not built ahead or its build raised."""
        fut = self._futures.get(kernel.binary_key)
        if fut is None:
            return None
        try:
            return fut.result()
        except Exception:  # noqa: BLE001 - the runner builds it again in line and reports the real error
            return None

    def wait_all(self, progress: Callable[[int, int], None] | None = None) -> list:
        """Every build, in the kernels' order (None for one that raised); progress(done, total) as each ends."""
        from concurrent.futures import as_completed

        for fut in self._futures.values():  # cache reads first: they finish only when asked (as_completed waits)
            if isinstance(fut, _Lazy):
                fut.resolve()
        done = 0
        for _ in as_completed(self._futures.values()):
            done += 1
            if progress:
                progress(done, len(self._futures))
        return [self.get(k) for k in self.kernels]

    def close(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Lazy(Future):
    """A build from the cache: done when first asked for, in the asking thread."""

    def __init__(self, fn, *args):
        super().__init__()
        self._call = (fn, args)

    def resolve(self) -> None:
        if not self.done():
            fn, args = self._call
            try:
                self.set_result(fn(*args))
            except Exception as exc:  # noqa: BLE001 - raised again to the caller, as a pool's future would
                self.set_exception(exc)

    def result(self, timeout=None):
        self.resolve()
        return super().result(timeout)

    def exception(self, timeout=None):
        self.resolve()
        return super().exception(timeout)


def longest_first(kernels: list[BoundKernel]) -> list[BoundKernel]:
    """The order builds are submitted in: the first kernel to be measured first (the GPU starts on it as soon as
    it is built), then the rest by their source's size with the headers it includes, largest first (rungs 14-16
    still compile the longest when built for one shape, several seconds each; started last, they would keep the GPU
    waiting at the end)."""
    from gemmprof.catalog.sources import source_text

    if len(kernels) < 3:
        return list(kernels)

    def size(k: BoundKernel) -> int:
        try:
            return len(source_text(k.spec.file, include_dirs=k.spec.build_fields.include_dirs))
        except OSError:
            return 0

    return [kernels[0], *sorted(kernels[1:], key=size, reverse=True)]


def worth_building(kernel: BoundKernel, arch: str, shape, compiler: str | None) -> bool:
    """A kernel `run` will build with nvcc for `arch` at `shape`: not one NVRTC builds, not one whose spec targets
    other archs (it is skipped), not one whose constraints reject the shape (it is never compiled), not a host
    launcher (its shared library is built by its own path)."""
    from gemmprof.errors import SpecError
    from gemmprof.measure.build import builds_for, choose_compiler

    if kernel.spec.launcher is not None:
        return False

    if choose_compiler(kernel, compiler)[0] != "nvcc" or not builds_for(kernel, arch):
        return False
    try:
        kernel.check_shape(shape)
    except SpecError:
        return False
    return True


def for_run(pairs: Iterable[tuple[BoundKernel, str | None]], shape, compiler: str | None, arch: str | None = None,
            build: Callable | None = None, jobs: int | None = None, sms: int | None = None) -> CompileAhead:
    """Start the nvcc builds of a run's (kernel, compiler) jobs, in the order they will be measured, each as the
    runner will build it at `shape` (BoundKernel.for_shape with the device's multiprocessor count; a planning entry
    as the rung it chooses there)."""
    if arch is None:
        from gemmprof.measure.build import device_arch, device_sms

        try:
            arch, sms = device_arch(), device_sms()
        except Exception:  # noqa: BLE001 - no device to read: nothing ahead, the runner builds in line and says why
            return CompileAhead([], "")
    from gemmprof.catalog.plan import resolve
    from gemmprof.errors import SpecError

    kernels = []
    for k, c in pairs:
        try:
            k = resolve(k, shape, sms)
        except SpecError:  # the runner resolves it again and reports why in the kernel's row
            continue
        if worth_building(k, arch, shape, c or compiler):
            try:
                kernels.append(k.for_shape(shape, sms))
            except SpecError:  # a `specialize` that fails: the runner reports it in the kernel's row
                pass
    return CompileAhead(kernels, arch, build, jobs)


def announce(ahead: CompileAhead) -> str:
    """The compile phase's progress line."""
    n, cached = len(ahead), ahead.cached
    if cached == n:
        return f"{n} kernel{'s' * (n != 1)} built by nvcc before: read from the cache"
    line = f"compiling {n - cached} kernel{'s' * (n - cached != 1)} with nvcc on {ahead.jobs} worker{'s' * (ahead.jobs != 1)}"
    return line + (f" ({cached} more from the cache)..." if cached else "...")


def build_rows(kernel: BoundKernel, arch: str, nvcc: str) -> list[BuildResult]:
    """One kernel's build rows: one, or one per kernel in a host launcher's .cu (module-level: a process pool
    pickles it)."""
    from gemmprof.measure.launcher_build import launcher_builds

    return launcher_builds(kernel, arch, nvcc) if kernel.spec.launcher is not None else [nvcc_build(kernel, arch, nvcc)]


def nvcc_build_all(kernels: list[BoundKernel], archs: list[str], jobs: int | None = None, progress=None,
                   build=None) -> list[BuildResult]:
    """Every kernel for every arch, in that order, built in the shared compile pool; progress(done, total) as
    each build ends; a host launcher gives a row per kernel in its .cu. A build that raises is that kernel's
    error row, never the others' loss."""
    from concurrent.futures import as_completed
    from functools import partial

    pool_of = thread_pool if build is not None else process_pool  # stand-ins in threads, nvcc in processes
    if build is None:
        build = partial(build_rows, nvcc=nvcc_path())  # missing nvcc: one error before any work
    tasks = [(k, a) for a in archs for k in kernels]
    out: list[list[BuildResult] | None] = [None] * len(tasks)
    for i, (k, a) in enumerate(tasks):
        if not builds_for(k, a):
            out[i] = [BuildResult(k.variant_name, a, True, None, f"builds only for {', '.join(k.spec.targets)}",
                                  skipped=True, kernel=k)]
    todo = [i for i in range(len(tasks)) if out[i] is None]
    if todo:
        with pool_of(max(1, min(jobs or default_jobs(), len(todo)))) as pool:
            futures = {pool.submit(build, *tasks[i]): i for i in todo}
            for n, fut in enumerate(as_completed(futures), 1):
                i = futures[fut]
                k, a = tasks[i]
                try:
                    rows = fut.result()
                    out[i] = rows if isinstance(rows, list) else [rows]
                except Exception as exc:  # noqa: BLE001 - one kernel's crash is its own error row
                    out[i] = [BuildResult(k.variant_name, a, False, None, f"{type(exc).__name__}: {exc}", kernel=k)]
                if progress:
                    progress(n, len(todo))
    return [r for rows in out if rows is not None for r in rows]
