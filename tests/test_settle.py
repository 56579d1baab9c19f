"""When a card under load has settled (measure/settle.py), tested on stand-in NVML traces of the three classes the
rule must tell apart: a clock that falls and levels off (settles), one that swings around a steady mean
(oscillates), one that keeps drifting (never settles). The traces are generated with random parameters; the
generator is checked to draw every class. The warm-up loop itself runs with a stand-in sampler."""

import math
import random

import pytest

from gemmprof.measure.settle import SettleRule, judge
from gemmprof.results.clocks import ClockSample

PERIOD = 0.02  # the sampler's default period (s)


def trace(kind: str, rng: random.Random, seconds: float = 25.0):
    """NVML samples of a card under a GEMM: 'settles' (boost clock, then an exponential fall to a plateau under the
    power cap, power rising to it, with noise), 'oscillates' (the same, then a swing of 5-15% around the plateau,
    period 0.3-1.5 s), 'drifts' (after the fall, a clock still falling by 2-3% of its value every second, as a card
    heating without end would: the rule's window of 2 s tells a drift from noise above 1.5% a second)."""
    start, plateau = 1980.0, rng.uniform(1300, 1750)
    tau = rng.uniform(0.3, 1.2)
    amp, period = rng.uniform(0.05, 0.15), rng.uniform(0.3, 1.5)
    drift = rng.uniform(0.02, 0.03)
    phase = rng.uniform(0, 2 * math.pi)
    out = []
    for i in range(int(seconds / PERIOD)):
        t = i * PERIOD
        clock = plateau + (start - plateau) * math.exp(-t / tau)
        if kind == "oscillates":
            clock *= 1 + amp * math.sin(2 * math.pi * t / period + phase) * (1 - math.exp(-t / tau))
        elif kind == "drifts":
            clock *= math.exp(-drift * max(0.0, t - 3 * tau))
        clock *= 1 + rng.gauss(0, 0.003)
        power = 700 * (1 - 0.5 * math.exp(-t / tau)) * (1 + rng.gauss(0, 0.005))
        out.append(ClockSample(clock, 60.0, ("sw_power_cap",), power, None, t))
    return out


def first_decision(samples, rule=None):
    """Judged every 0.1 s of load, as the warm-up loop does: (when it stopped, its verdict)."""
    rule, t = rule or SettleRule(), 0.1
    while True:
        state = judge([s for s in samples if s.t_s <= t], t, rule)
        if state.done:
            return t, state
        t = round(t + 0.1, 6)


def test_the_generator_draws_every_class():
    rng = random.Random(0)
    settled = first_decision(trace("settles", rng))[1].verdict
    oscillating = first_decision(trace("oscillates", rng))[1].verdict
    drifting = first_decision(trace("drifts", rng))[1].verdict
    assert {settled, oscillating, drifting} == {"settled", "oscillating", "not settled"}


@pytest.mark.parametrize("seed", range(40))
def test_a_clock_that_falls_and_levels_off_settles_after_its_fall(seed):
    rng = random.Random(seed)
    samples = trace("settles", rng)
    when, state = first_decision(samples)
    assert state.verdict == "settled"
    assert 2.0 <= when < 12.0  # never before the minimum warm-up, and long before the limit
    plateau = samples[-1].sm_clock_mhz
    assert abs(state.clock_mhz / plateau - 1) < 0.03  # the mean it reports is the plateau, not the boost


@pytest.mark.parametrize("seed", range(40))
def test_a_clock_swinging_around_a_steady_mean_settles_as_oscillating(seed):
    when, state = first_decision(trace("oscillates", random.Random(seed)))
    assert state.verdict == "oscillating" and when < SettleRule().max_s
    assert state.oscillation > 0.05


@pytest.mark.parametrize("seed", range(40))
def test_a_clock_that_keeps_drifting_never_settles(seed):
    when, state = first_decision(trace("drifts", random.Random(seed)))
    assert state.verdict == "not settled" and when >= SettleRule().max_s


def test_too_few_samples_keep_it_warming():
    state = judge([ClockSample(1980.0, t_s=0.0)], 5.0)
    assert not state.done and state.verdict == ""


def test_the_warm_up_loop_stops_when_the_stand_in_card_settles(monkeypatch):
    """timing.warm with a stand-in timer and sampler: the loop runs chunks until judge says settled, and its record
    carries the verdict, the time it took and the plateau."""
    from gemmprof.measure import timing

    samples = trace("settles", random.Random(3))
    now = {"t": 0.0}

    class Sampler:
        reader = None

        def now(self):
            return now["t"]

        def snapshot(self, since=None):
            return [s for s in samples if s.t_s <= now["t"] and (since is None or s.t_s >= since)]

    class Timer:
        batches: list = []

        def __call__(self, n, check=True):
            now["t"] += 0.1 if n > 1 else 0.001
            return [0.5] * n

    record = timing.warm(Timer(), timing.TimingConfig(regime="sustained"), Sampler())
    assert record.regime == "sustained" and record.verdict == "settled"
    assert 2.0 <= record.seconds < 12.0 and record.calls > 100
    assert abs(record.clock_mhz / samples[-1].sm_clock_mhz - 1) < 0.03
