"""When gemmprof started: read once, as the package's first import (a run's elapsed_s, and so the checks' cost, is
counted from it)."""

import time

STARTED_NS = time.perf_counter_ns()


def elapsed_s(now_ns: int | None = None) -> float:
    """Seconds since gemmprof started."""
    return ((now_ns or time.perf_counter_ns()) - STARTED_NS) / 1e9
