"""Worker pools for builds: threads for stand-ins and subprocess-bound work, spawned processes for real nvcc builds
(kept out of the measuring process's GIL). Shared by `measure.build`, `measure.compile_pool` and `tune`."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def default_jobs() -> int:
    """Compile workers: the CPU cores less two (the measuring process and the system), 1 to 16 (nvcc is one
    process per build; 20 rungs on a 16-core machine then compile nearly all at once)."""
    return max(1, min(16, (os.cpu_count() or 2) - 2))


def thread_pool(jobs: int | None = None) -> ThreadPoolExecutor:
    """For nvcc builds (subprocesses): threads suffice."""
    return ThreadPoolExecutor(max_workers=jobs or default_jobs(), thread_name_prefix="gemmprof-compile")


def process_pool(jobs: int | None = None, initializer: Callable | None = None):
    """Builds kept out of the caller's GIL: spawned processes, never forked from a process that may hold a CUDA
    context. By default they leave Ctrl-C to the parent."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs or default_jobs(), mp_context=mp.get_context("spawn"),
                               initializer=initializer or ignore_sigint)


def ignore_sigint() -> None:
    """Pool and worker processes leave Ctrl-C to the parent, which keeps what finished and stops them. In the
    parent itself (tune --serial measures there, from a thread) Ctrl-C stays where it is."""
    import multiprocessing
    import signal
    import threading

    if multiprocessing.parent_process() is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
