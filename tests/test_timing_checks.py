"""The checks that keep a timed figure honest, without a GPU: the runner over the NumPy stand-in for CuPy
(tests/numpy_cupy.py) with GEMMs that cheat as benchmark-gaming code does, and each check's pure logic with
stand-ins (batches as the host clock saw them, a CUDA runtime's persisting-L2 calls, the physical floor).
The same cheats run on the GPU from tests/red_team/ (tests/test_red_team.py, scripts/gpu_stages/redteam.sh)."""

import sys
import types

import numpy as np
import pytest

from gemmprof.measure import runner as runner_mod
from gemmprof.measure import timing
from gemmprof.measure.timing import BatchRecord, TimingConfig, batch_findings, long_tails
from gemmprof.results.run import VariantResult
from gemmprof.results.shape import GemmShape

SHAPE = GemmShape(64, 48, 32)


@pytest.fixture
def numpy_runner(monkeypatch):
    import numpy_cupy

    def make(**config):
        monkeypatch.setitem(sys.modules, "cupy", numpy_cupy.make([]))
        monkeypatch.setattr(runner_mod.Runner, "clock_reader", lambda self: None)
        timing.capture()  # as `gemmprof run` does before it imports any user code
        from gemmprof.catalog.gpu_specs import get_gpu

        opts = runner_mod.RunOptions(shape=SHAPE, seed=7, timing=TimingConfig(**{"budget_s": 0.0, "min_reps": 20,
                                                                                  "max_reps": 20, **config}))
        return runner_mod.Runner(get_gpu("h100"), opts)

    return make


def _row(name):
    return VariantResult(id=name, name=name, title=name, dtype="fp32", nvtx_range=f"gemmprof {name} 64x48x32")


def _measure(runner, launch_for):
    row, prepared = runner._verify(_row("v"), runner_mod.Prepared(launch_for, "fp32", "fp32", ("row", None), 1e-4))
    return runner._time(row, prepared)


def honest(problem, out):
    def launch():
        out[...] = problem.alpha * (problem.A @ problem.B)
    return launch


def test_an_honest_gemm_passes_every_check_on_every_policy(numpy_runner):
    for l2 in ("flush", "rotate", "warm"):
        row = _measure(numpy_runner(l2=l2, checks=20), honest)
        assert row.status == "ok", (l2, row.message)
        assert len(row.checks.checked) == 20 and row.checks.passed  # every timed call checked, all right
        assert row.checks.calls >= 20


@pytest.mark.parametrize("fill", ["zeros", "ints", "randn", "uniform01"])
def test_an_honest_gemm_passes_every_check_on_every_fill(numpy_runner, fill):
    """The timed calls' inputs of another fill (zeros: an all-zero reference but for the changed row, itself zero
    where B is) are checked without a false alarm; a GEMM that writes nothing still fails."""
    row = _measure(numpy_runner(fill=fill, checks=5), honest)
    assert row.status == "ok" and row.checks.passed and row.checks.checked, (fill, row.message)

    def nothing_after_verification(problem, out):
        calls = {"n": 0}

        def launch():
            calls["n"] += 1
            if calls["n"] <= 2:
                out[...] = problem.alpha * (problem.A @ problem.B)
        return launch

    assert _measure(numpy_runner(fill=fill, checks=5), nothing_after_verification).status == "FAIL"


def test_rotation_uses_several_sets_each_with_its_own_output(numpy_runner):
    r = numpy_runner(l2="rotate")
    sets = r.timed_sets("fp32")
    assert len(sets) >= 2 and len({id(p.A) for p in sets}) == len(sets)
    bench = r.bench(runner_mod.Prepared(honest, "fp32", "fp32", ("row", None), 1e-4))
    assert len({id(s.out) for s in bench.sets}) == len(sets)


def _cheat_row(numpy_runner, launch_for):
    row = _measure(numpy_runner(checks=5), launch_for)
    assert row.verification.passed  # every cheat here is right on its verified call
    return row


@pytest.mark.parametrize(("key", "named"), [
    (lambda p: (id(p.A), id(p.B)), "right on its verified call but wrong on"),  # output cached by input pointer
    (lambda p: (p.A[:2, :4].tobytes(), p.B[:2, :4].tobytes()), "wrong values"),  # by a few elements, a cheap hash
], ids=["pointer", "fingerprint"])
def test_output_cached_by_pointer_or_fingerprint_fails(numpy_runner, key, named):
    cache = {}

    def cached(problem, out):
        def launch():
            k = key(problem)
            if k not in cache:
                cache[k] = problem.alpha * (problem.A @ problem.B)
            out[...] = cache[k]
        return launch

    row = _cheat_row(numpy_runner, cached)
    assert row.status == "FAIL" and named in row.message


def test_a_gemm_that_works_only_on_its_first_calls_fails(numpy_runner):
    count = {"n": 0}

    def first_two(problem, out):
        def launch():
            count["n"] += 1
            if count["n"] <= 2:  # the two verification launches
                out[...] = problem.alpha * (problem.A @ problem.B)
        return launch

    row = _cheat_row(numpy_runner, first_two)
    assert row.status == "FAIL" and "never written" in row.message  # C was poisoned again before each call


def test_a_function_that_replaces_the_timer_is_caught_and_cannot_shrink_the_figure(numpy_runner):
    r = numpy_runner(checks=2)
    cupy = sys.modules["cupy"]
    real = cupy.cuda.get_elapsed_time

    def patching(problem, out):
        def launch():
            cupy.cuda.get_elapsed_time = lambda s, e: 1e-9  # "0.000000001 ms"
            out[...] = problem.alpha * (problem.A @ problem.B)
        return launch

    try:
        row = _measure(r, patching)
    finally:
        cupy.cuda.get_elapsed_time = real
    assert row.status == "FAIL" and "replaced cupy.cuda.get_elapsed_time" in row.message
    assert min(row.timing.samples_ms) > 1e-6  # gemmprof's own timer was not the replacement


def test_a_function_that_sets_a_persisting_l2_carve_out_is_named(monkeypatch):
    from gemmprof.measure.l2 import PersistingL2

    rt = _FakeRuntime()
    persist = PersistingL2(rt, stream_ptr=lambda: 0)
    persist.reset()
    assert persist.status == "reset to 0 before timing" and rt.limit == 0 and rt.resets == 1
    rt.limit = 30 << 20  # the function set a carve-out during its calls
    rt.window = 1 << 20
    found = persist.findings()
    assert len(found) == 2 and "persisting-L2 carve-out of 31457280 bytes" in found[0]
    assert "access policy window" in found[1]
    assert rt.limit == 0 and rt.window == 0  # undone
    persist.restore()
    assert rt.limit == 4 << 20  # the card's own setting back


def test_without_cuda_bindings_the_carve_out_says_it_was_not_reset(monkeypatch):
    from gemmprof.measure import l2

    monkeypatch.setattr(l2, "_runtime", lambda: None)
    p = l2.PersistingL2()
    p.reset()
    assert p.findings() == [] and p.status.startswith("not reset: cuda-bindings is not installed")


class _FakeRuntime:
    """cuda.bindings.runtime's persisting-L2 calls, on a card whose carve-out starts at 4 MiB."""

    class cudaError_t:
        cudaSuccess = 0

    class cudaLimit:
        cudaLimitPersistingL2CacheSize = 6

    class cudaStreamAttrID:
        cudaLaunchAttributeAccessPolicyWindow = 1

    def __init__(self):
        self.limit, self.window, self.resets = 4 << 20, 0, 0

    def cudaDeviceGetLimit(self, which):
        return 0, self.limit

    def cudaDeviceSetLimit(self, which, value):
        self.limit = value
        return (0,)

    def cudaCtxResetPersistingL2Cache(self):
        self.resets += 1
        return (0,)

    def cudaStreamGetAttribute(self, stream, which):
        return 0, types.SimpleNamespace(accessPolicyWindow=types.SimpleNamespace(num_bytes=self.window))

    @staticmethod
    def cudaStreamAttrValue():
        return types.SimpleNamespace(accessPolicyWindow=types.SimpleNamespace(num_bytes=None))

    def cudaStreamSetAttribute(self, stream, which, value):
        self.window = value.accessPolicyWindow.num_bytes
        return (0,)


# -- what the host clock says of the events ---------------------------------------------------------------------
def _batch(**kw):
    base = {"calls": 10, "events_ms": 10.0, "span_ms": 10.5, "host_ms": 10.6, "enqueue_ms": 1.0, "tail_ms": 0.01}
    return BatchRecord(**{**base, **kw})


def test_honest_batches_raise_nothing_whether_the_gpu_or_the_host_is_the_bottleneck():
    assert batch_findings([_batch()], 1.0) == []
    # host-bound: tiny kernels, the host enqueued for the whole batch
    assert batch_findings([_batch(events_ms=0.1, span_ms=9.0, host_ms=9.2, enqueue_ms=9.1)], 0.01) == []


def test_work_left_running_after_the_last_event_of_two_batches_is_named():
    found = batch_findings([_batch(tail_ms=40.0), _batch(), _batch(tail_ms=0.5)], 1.0)
    assert len(found) == 1 and "work outlived its timing events" in found[0] and "40.000 ms" in found[0]
    assert "2 of 3 batches" in found[0]


@pytest.mark.parametrize("median_ms, tail_ms, long", [(1.0, 0.19, 0), (1.0, 0.21, 1), (10.0, 0.45, 0), (10.0, 0.55, 1)])
def test_a_long_tail_is_past_0_2_ms_or_5_percent_of_a_call(median_ms, tail_ms, long):
    assert long_tails([_batch(tail_ms=tail_ms)], median_ms) == long


def test_one_long_tail_is_the_host_held_up_and_gets_a_second_look():
    """Seen on the H200: an honest rung's batch ended 0.333 ms before the host saw the device idle, while nvcc
    built other variants on the same cores. One long tail is no finding; the variant gets one more batch, and a
    cheat that leaves work running again is named on them."""
    one = [_batch(), _batch(tail_ms=0.333), _batch()]
    assert batch_findings(one, 3.4) == []

    class Timer:
        def __init__(self, tail):
            self.tail, self.batches = tail, list(one)

        def __call__(self, n, check=True):
            assert n == 3 and not check
            self.batches.append(_batch(tail_ms=self.tail))
            return [1.0] * n

    noise, cheat = Timer(0.02), Timer(0.5)
    for t in (noise, cheat):
        timing.second_look(t, t.batches, 3.4)
        assert len(t.batches) == 3 + timing.SECOND_LOOK_BATCHES
    assert batch_findings(noise.batches, 3.4) == []
    assert "4 of 6 batches" in batch_findings(cheat.batches, 3.4)[0]
    clean = Timer(0.0)
    clean.batches = [_batch()] * 3
    timing.second_look(clean, clean.batches, 3.4)  # no long tail: no extra batch
    assert len(clean.batches) == 3


def test_a_host_that_notices_a_batch_end_late_is_no_finding():
    """NVML's readings can hold the driver for milliseconds: the host waited 8 ms for a batch the events spanned in
    4.3 ms (seen on the H200 with a legitimate kernel). Only the tail, read with the sampler held off, counts."""
    assert batch_findings([_batch(events_ms=4.0, span_ms=4.323, host_ms=8.1, enqueue_ms=0.1, tail_ms=0.03)], 1.34) == []


def test_events_longer_than_the_host_clock_mean_a_tampered_timer():
    found = batch_findings([_batch(events_ms=50.0, span_ms=50.5, host_ms=10.0)], 5.0)
    assert any("tampered" in f for f in found)


def test_a_side_stream_cheat_on_a_stand_in_device_is_caught(numpy_runner, monkeypatch):
    """A device whose synchronize waits for work the function left on another stream: the batch's tail shows it."""
    r = numpy_runner(checks=1)
    ops = timing.captured()[0]
    slow_sync = types.SimpleNamespace(event=ops.event, elapsed=ops.elapsed,
                                      device_sync=lambda: __import__("time").sleep(0.002))
    monkeypatch.setattr(timing, "captured", lambda: (slow_sync, timing.watched_timers()))
    row = _measure(r, honest)
    assert row.status == "FAIL" and "work outlived its timing events" in row.message


# -- the physical floor -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, shape, median_ms", [
    ("fp32", GemmShape(4096, 4096, 4096), 0.5),  # 137 TFLOP/s of fp32 on a 67 TFLOP/s card
    ("fp16", GemmShape(8192, 8192, 8192), 0.2),  # 5,500 TFLOP/s
    ("bf16", GemmShape(16, 4096, 4096), 0.001),  # memory: 33 MB in 1 us
])
def test_a_time_below_the_physical_floor_is_impossible(dtype, shape, median_ms):
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.model.annotate import annotate
    from gemmprof.results.clocks import ClockRecord
    from gemmprof.results.run import Measurement

    row = VariantResult(id="x", name="x", title="x", dtype=dtype, timing=Measurement((median_ms,) * 5),
                        clocks=ClockRecord(1980, 1980, held_mhz=1980, held_min_mhz=1970, held_max_mhz=1980))
    annotate(row, shape, 0.0, get_gpu("h200"))
    assert row.status == "FAIL" and row.message.startswith("impossible") and "TFLOP/s" in row.message
    assert "TB/s" in row.message  # both figures, compute and memory


def test_a_fast_honest_time_is_not_refused():
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.model.annotate import annotate, floor_s
    from gemmprof.results.clocks import ClockRecord
    from gemmprof.results.run import Measurement

    shape, gpu = GemmShape(8192, 8192, 8192), get_gpu("h200")
    clocks = ClockRecord(1980, 1980, held_mhz=1980, held_min_mhz=1975, held_max_mhz=1980)
    floor = floor_s(VariantResult(id="c", name="cublas_hgemm", title="", dtype="fp16", kind="baseline",
                                  clocks=clocks), shape, 0.0, gpu)[0]
    # 883 TFLOP/s (the fastest cuBLAS burst seen on the H200) is above the floor; the floor is the 1070 TFLOP/s peak
    # at 1980 MHz plus 5%
    assert 2 * 8192 ** 3 / 883e12 > floor > 2 * 8192 ** 3 / (1070.6e12 * 1.06)
    row = VariantResult(id="c", name="cublas_hgemm", title="", dtype="fp16", kind="baseline",
                        timing=Measurement((2 * 8192 ** 3 / 883e12 * 1e3,) * 5), clocks=clocks)
    assert annotate(row, shape, 0.0, gpu).status == "ok"


def test_timed_calls_differ_from_every_earlier_call(numpy_runner):
    """The bench writes a fresh row into A before each call (a different row of values each time) and restores it
    after: no two calls see the same inputs (past the pool's size, where the pool is drawn again), and the problem
    is as it was once timing ends."""
    from gemmprof.measure.bench import POOL_ROWS

    r = numpy_runner(min_reps=3 * POOL_ROWS, max_reps=3 * POOL_ROWS)
    seen = []

    def recording(problem, out):
        def launch():
            seen.append(problem.A.copy())
            out[...] = problem.alpha * (problem.A @ problem.B)
        return launch

    before = r.problem("fp32").A.copy()
    row = _measure(r, recording)
    assert row.status == "ok"
    timed = seen[2:]  # after the two verification launches
    assert len(timed) > 3 * POOL_ROWS
    fingerprints = {a.tobytes() for a in timed}
    assert len(fingerprints) == len(timed)
    assert np.array_equal(r.problem("fp32").A, before)


# -- what the checks cost ----------------------------------------------------------------------------------------
def test_every_timed_variant_says_what_its_checks_cost(numpy_runner):
    """The host time of the checks' own work (rows changed, C poisoned, calls verified, the syncs after each
    batch) and their device work per call are counted on the row; the run's total sums the rows."""
    from gemmprof.results.run import RunResult

    r = numpy_runner(checks=5)
    row = _measure(r, honest)
    assert row.status == "ok"
    cost = row.checks.cost_s
    assert cost > 0
    bench = r.bench(runner_mod.Prepared(honest, "fp32", "fp32", ("row", None), 1e-4))
    before = bench.host_ns
    bench.prepare(0)
    bench.launch()
    bench.finish(0, True)
    bench.verify_checked()
    assert bench.host_ns > before  # each part adds to it
    result = RunResult(SHAPE, 1.0, 0.0, {}, "h100", 7, {}, [row, _row("not timed")])
    assert result.checks_cost_s == pytest.approx(cost)
    back = type(row.checks).from_dict(row.checks.to_dict())
    assert back.cost_s == pytest.approx(cost)


def test_the_checks_device_work_is_timed_without_the_call_and_leaves_a_unchanged(numpy_runner):
    r = numpy_runner()
    bench = r.bench(runner_mod.Prepared(honest, "fp32", "fp32", ("row", None), 1e-4))
    s = bench.sets[0]
    a_before = s.problem.A.copy()
    s.out[...] = 1.0
    events = []

    class Ops:
        def event(self):
            e = types.SimpleNamespace(record=lambda: events.append("record"), synchronize=lambda: None)
            return e

        def device_sync(self):
            events.append("sync")

        def elapsed(self, a, b):
            return 2.0  # ms between the two events

    assert timing.check_work_ms(bench, Ops(), calls=4) == pytest.approx(0.5)
    assert events == ["sync", "record", "record"]
    assert np.array_equal(s.problem.A, a_before)  # each row written was put back
    assert np.isnan(s.out).all()  # C poisoned, as before each call
    assert timing.check_work_ms(object(), Ops()) is None  # a bench without check work (a copy's)


def test_checks_s_counts_the_device_work_over_every_call():
    batches = [BatchRecord(10, 1.0, 1.0, 1.0, 0.5, 0.01), BatchRecord(30, 1.0, 1.0, 1.0, 0.5, 0.01)]
    tv = timing.TimedVariant(timing.Measurement((1.0,)), batches=batches, checks_ns=2_000_000, check_work_ms=0.05)
    assert tv.checks_s(3_000_000) == pytest.approx(0.002 + 0.003 + 40 * 0.05e-3)


def test_the_run_says_what_its_checks_cost_against_the_time_gemmprof_took():
    from gemmprof import _started
    from gemmprof._started import elapsed_s
    from gemmprof.render.run_tables import checks_line
    from gemmprof.results.run import RunResult
    from gemmprof.results.stages import TimingChecks

    row = _row("v")
    row.checks = TimingChecks(100, (3, 50), cost_s=0.25)
    result = RunResult(SHAPE, 1.0, 0.0, {}, "h100", 7, {}, [row])
    assert checks_line(result) is None  # not known until the run has ended
    result.elapsed_s = elapsed_s(now_ns=_started.STARTED_NS + 10 * 10 ** 9)
    assert checks_line(result).startswith("checks of the timed calls: 0.25 s of the run's 10.0 s (2.5%")
    back = RunResult.from_dict(result.to_dict())
    assert back.elapsed_s == 10.0 and checks_line(back) == checks_line(result) and back.notes == []


def test_a_sustained_warm_up_is_not_counted_in_the_checks_cost_and_a_burst_one_is():
    batches = [BatchRecord(1000, 1.0, 1.0, 1.0, 0.5, 0.01), BatchRecord(20, 1.0, 1.0, 1.0, 0.5, 0.01)]
    tv = timing.TimedVariant(timing.Measurement((1.0,)), batches=batches, checks_ns=1_000_000, check_work_ms=0.1,
                             counted_from=1, uncounted_ns=4_000_000)
    assert tv.checks_s(5_000_000) == pytest.approx(0.001 + 0.005 - 0.004 + 20 * 0.1e-3)
    bench = types.SimpleNamespace(host_ns=123)
    timer = types.SimpleNamespace(check_ns=456, bench=bench)
    assert timing._uncounted(TimingConfig(regime="sustained"), timer, 7) == (7, 456, 123)
    assert timing._uncounted(TimingConfig(regime="burst"), timer, 7) == (0, 0, 0)


def test_a_slow_variant_has_its_checked_calls_among_the_few_the_budget_allows(numpy_runner):
    """Three checks over a five-call budget: the calls after the probes are all checked, so no call is added for
    the checks (a call of the naive rung at 4096 is 0.28 s)."""
    for _ in range(10):
        row = _measure(numpy_runner(checks=3, min_reps=5, max_reps=5, regime="burst", warmup=0), honest)
        calls = row.checks.calls
        assert row.status == "ok" and len(row.timing.samples_ms) == 5 and calls <= 6, row.checks  # one warm-up call
        assert {calls - 2, calls - 1} <= set(row.checks.checked)  # the two after the three probes
