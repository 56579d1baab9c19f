"""Experiment (not kept): does the device wait on the host between gemmprof's timed calls at small shapes?

    python3 scripts/lead_check.py LEAD_US -- RUN ARGS...

Runs `gemmprof run RUN ARGS...` in this process with the L2 flush followed by a device-side wait of LEAD_US
microseconds (one thread spinning on %globaltimer), so that the device is busy while the host enqueues the start
event and the launch. If the host were the bottleneck, the timed calls would shrink with a lead; a lead of 0 is the
default behaviour.
"""

import sys

import cupy

from gemmprof import cli
from gemmprof.measure import l2

SPIN = cupy.RawKernel(r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
""", "spin")


def main() -> int:
    lead_ns = int(float(sys.argv[1]) * 1000)
    args = sys.argv[sys.argv.index("--") + 1:]
    plain = l2.Flusher.__call__

    def flush_then_wait(self):
        plain(self)
        if lead_ns:
            SPIN((1,), (1,), (cupy.uint64(lead_ns),))

    l2.Flusher.__call__ = flush_then_wait
    return cli.main(["run", *args]) or 0


if __name__ == "__main__":
    sys.exit(main())
