"""Timing's stopping rule (measure.timing.until_precise) and the median's confidence interval it reads
(results.stages.Measurement.median_ci), with stand-in timers: no GPU."""

import random
import statistics

import pytest
from clitools import invoke

from gemmprof.measure.timing import TimingConfig, until_precise
from gemmprof.results.stages import Measurement


def stand_in(per_ms: float, noise: float, seed: int = 0):
    """A timer of n launches of a kernel of per_ms, each off by a uniform relative error of +-noise; it keeps the
    batch sizes it was asked for."""
    rng = random.Random(seed)
    batches = []

    def timed(n):
        batches.append(n)
        return [per_ms * (1 + rng.uniform(-noise, noise)) for _ in range(n)]

    return timed, batches


def test_a_steady_kernel_stops_long_before_its_budget():
    timed, batches = stand_in(2.7, 0.002)  # 0.2%: an H100 GEMM at 4096 is about this steady
    samples = until_precise(timed, TimingConfig())  # the budget would allow 200 launches
    assert batches[:2] == [3, 7] and sum(batches) == len(samples) == 10
    assert Measurement(tuple(samples)).median_ci <= 0.005


def test_a_noisy_kernel_spends_its_budget_in_doubling_batches():
    timed, batches = stand_in(2.7, 0.30)
    samples = until_precise(timed, TimingConfig())
    assert batches == [3, 7, 10, 20, 40, 80, 40] and len(samples) == 200  # max_reps caps the last batch
    assert Measurement(tuple(samples)).median_ci > 0.005


def test_precision_zero_spends_the_whole_budget():
    timed, _ = stand_in(27.5, 0.001)
    assert len(until_precise(timed, TimingConfig(precision=0))) == 36  # 1 s / 27.5 ms, as before the rule


def test_a_tighter_precision_takes_more_launches():
    counts = [len(until_precise(stand_in(1.0, 0.05, seed=3)[0], TimingConfig(precision=p))) for p in (0.02, 0.002)]
    assert counts[0] < counts[1]


def test_slow_kernels_keep_their_floor_and_exact_counts_stay_exact():
    timed, batches = stand_in(275.0, 0.0)
    assert len(until_precise(timed, TimingConfig())) == 5 and batches == [3, 2]  # the slow-kernel floor
    timed, batches = stand_in(1.0, 0.3)
    assert len(until_precise(timed, TimingConfig(min_reps=8, max_reps=8, budget_s=0.0))) == 8  # tune's fixed count
    assert batches == [3, 5]


def test_median_ci_is_the_order_statistics_interval():
    assert Measurement((1.0, 2.0, 3.0)).median_ci == pytest.approx((3 - 1) / (2 * 2))  # few samples: whole range
    s = tuple(float(i) for i in range(1, 101))  # n = 100: ranks 50 -+ 9.8 -> indices 40 and 60
    assert Measurement(s).median_ci == pytest.approx((61 - 41) / (2 * statistics.median(s)))
    rng = random.Random(1)
    wide = Measurement(tuple(1 + 0.1 * rng.random() for _ in range(400)))
    narrow = Measurement(wide.samples_ms[:40])
    assert wide.median_ci < narrow.median_ci  # more samples of one distribution: a narrower interval
    assert "median_ci" in Measurement(s).to_dict()


@pytest.mark.parametrize("bad", ["nan", "-1", "101", "inf"])
def test_run_refuses_a_bad_precision_in_one_line(runner, bad):
    r = invoke(runner, ["run", "1", "--precision", bad])
    assert r.exit_code == 2 and "--precision" in r.output and "Traceback" not in r.output
