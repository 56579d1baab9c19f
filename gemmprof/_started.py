"""When gemmprof started: read once, as the package's first import (a run's elapsed_s, and so the checks' cost, is
counted from it)."""

import time

STARTED_NS = time.perf_counter_ns()
