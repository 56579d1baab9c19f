"""The sweep engine with stand-in compiler and GPU: pipeline, cache, resume, replay, budgets, strategies, noise."""

import sys
import time

import pytest
from tune_helpers import FLOPS, SHAPE, sweep, toy_spec

from gemmprof.errors import GemmprofError
from gemmprof.render.tune_table import to_table
from gemmprof.tune.measure import InlineMeasurer
from gemmprof.tune.records import COMPILE_ERROR, FAILED_VERIFICATION, INVALID, TIMED
from gemmprof.tune.result import TuneResult, make_verdict
from gemmprof.tune.space import config_key, enumerate_space
from gemmprof.tune.standin import StandInCompiler, StandInFactory, standin_tflops
from gemmprof.tune.strategies import make_strategy


class Interrupt:
    """A progress callback that presses Ctrl-C after `after` results."""

    def __init__(self, after):
        self.after, self.seen = after, 0

    def __call__(self, e):
        if e.record is not None:
            self.seen += 1
            if self.seen == self.after:
                raise KeyboardInterrupt


def _measured(m):
    return [c for c in m._measure.calls if not c.startswith("sample:")]


def _measurer(**kw):
    m = InlineMeasurer(StandInFactory(flops=FLOPS, **kw))
    m.start()
    return m


def test_exhaustive_sweep_measures_every_valid_configuration_once(tmp_path):
    spec = toy_spec(tmp_path / "s")
    space = enumerate_space(spec, SHAPE)
    bad_compile = frozenset({config_key(space.valid[0])})
    bad_verify = frozenset({config_key(space.valid[1])})
    m = _measurer(fail_verify_keys=bad_verify)
    r = sweep(spec, tmp_path / "c", measurer=m, compiler=StandInCompiler(fail_keys=bad_compile))
    assert len(r.configs) == len(space.valid) and r.measured_now == len(space.valid) and r.replayed == 0
    counts = r.status_counts()
    assert counts == {COMPILE_ERROR: 1, FAILED_VERIFICATION: 1, TIMED: len(space.valid) - 2}
    assert sorted(_measured(m)) == sorted(
        config_key(p) for p in space.valid[1:])  # everything that compiled was measured, once
    compile_err = next(c for c in r.configs if c.status == COMPILE_ERROR)
    assert compile_err.message == "kernel.cu(12): error: stand-in compile failure"
    best = max(space.valid, key=standin_tflops)
    assert r.winner_params == best
    lines = open(r.cache_file).read().splitlines()
    assert len(lines) == 1 + space.total + 1  # header, every configuration (invalid ones too), the re-timing
    assert sum(INVALID in ln for ln in lines) == len(space.rejected)


def test_interrupted_sweep_resumes_where_it_stopped_and_a_finished_one_replays(tmp_path):
    spec = toy_spec(tmp_path / "s")
    n = len(enumerate_space(spec, SHAPE).valid)
    m1 = _measurer()
    first = sweep(spec, tmp_path / "c", measurer=m1, progress=Interrupt(after=10))
    assert first.interrupted and first.verdict is None and first.measured_now >= 10
    assert first.best is not None  # the best so far is there to print
    m2 = _measurer()
    second = sweep(spec, tmp_path / "c", measurer=m2)
    assert not second.interrupted and len(second.configs) == n
    assert second.measured_now == n - first.measured_now and second.replayed == first.measured_now
    recorded = {config_key(c.params) for c in first.configs}
    assert recorded.isdisjoint(_measured(m2))  # nothing recorded is measured again (in-flight ones are)
    m3 = _measurer()
    t0 = time.perf_counter()
    third = sweep(spec, tmp_path / "c", measurer=m3)
    assert time.perf_counter() - t0 < 2 and third.measured_now == 0 and m3._measure.calls == []  # no re-timing either
    assert third.verdict == second.verdict and third.winner_params == second.winner_params


def test_serial_and_pipelined_sweeps_agree_and_the_pipeline_overlaps(tmp_path):
    spec = toy_spec(tmp_path / "s")
    kw = {"compiler": StandInCompiler(delay_s=0.03), "budget_configs": 16, "retime_rounds": 0}
    t0 = time.perf_counter()
    serial = sweep(spec, tmp_path / "a", measurer=_measurer(delay_s=0.03), serial=True, **kw)
    t_serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    piped = sweep(spec, tmp_path / "b", measurer=_measurer(delay_s=0.03), pool_workers=4, **kw)
    t_piped = time.perf_counter() - t0
    assert {config_key(c.params) for c in serial.configs} == {config_key(c.params) for c in piped.configs}
    assert [c.samples_ms for c in sorted(serial.configs, key=lambda c: config_key(c.params))] == \
        [c.samples_ms for c in sorted(piped.configs, key=lambda c: config_key(c.params))]
    assert t_piped < 0.75 * t_serial, (t_serial, t_piped)


def test_random_sample_is_seeded_and_budgeted(tmp_path):
    spec = toy_spec(tmp_path / "s")
    a = sweep(spec, tmp_path / "a", strategy="random", seed=7, budget_configs=9, measurer=_measurer())
    b = sweep(spec, tmp_path / "b", strategy="random", seed=7, budget_configs=9, measurer=_measurer())
    c = sweep(spec, tmp_path / "c", strategy="random", seed=8, budget_configs=9, measurer=_measurer())
    keys = [config_key(x.params) for x in a.configs]
    assert len(keys) == 9 and sorted(keys) == sorted(config_key(x.params) for x in b.configs)
    assert sorted(keys) != sorted(config_key(x.params) for x in c.configs)
    more = sweep(spec, tmp_path / "a", strategy="random", seed=7, budget_configs=12, measurer=_measurer())
    assert more.replayed == 9 and more.measured_now == 3  # a bigger budget continues the same sample


def test_budget_in_minutes_stops_proposing(tmp_path):
    spec = toy_spec(tmp_path / "s")
    now = [0.0]

    def clock():
        now[0] += 1.0  # every look at the clock is a second later
        return now[0]

    r = sweep(spec, tmp_path / "c", measurer=_measurer(), budget_s=12.0, clock=clock, retime_rounds=0)
    assert 0 < len(r.configs) < len(enumerate_space(spec, SHAPE).valid)


def test_strategies_replay_a_recorded_cache_without_measuring(tmp_path):
    spec = toy_spec(tmp_path / "s")
    full = sweep(spec, tmp_path / "c", measurer=_measurer())
    for strategy in ("random", "exhaustive"):
        m = _measurer()
        r = sweep(spec, tmp_path / "c", strategy=strategy, budget_configs=10, measurer=m, top=3)
        assert r.measured_now == 0 and len(r.configs) == 10 and _measured(m) == []  # only its top 3 re-timed
        assert all(full_c in full.configs for full_c in r.configs)


def test_optuna_replays_a_recorded_cache_and_finds_a_fast_one(tmp_path):
    pytest.importorskip("optuna")
    spec = toy_spec(tmp_path / "s")
    full = sweep(spec, tmp_path / "c", measurer=_measurer(), retime_rounds=0)
    ranked = [c.tflops for c in full.timed]
    m = _measurer()
    r = sweep(spec, tmp_path / "fresh", strategy="optuna", seed=3, budget_configs=20, measurer=m, retime_rounds=0)
    assert r.measured_now == 20 and len(set(_measured(m))) == 20
    assert r.best.tflops >= ranked[len(ranked) // 4]  # in the top quarter of the whole space
    replay = sweep(spec, tmp_path / "c", strategy="optuna", seed=3, budget_configs=20, measurer=_measurer())
    assert replay.measured_now == 0 and len(replay.configs) == 20


def test_optuna_missing_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    space = enumerate_space(toy_spec(tmp_path), SHAPE)
    with pytest.raises(GemmprofError, match=r"needs Optuna: pip install 'gemmprof\[tune\]'"):
        make_strategy("optuna", space)


def test_verdict_margin_and_noise():
    params = {"a": {"X": 1}, "b": {"X": 2}}
    clear = make_verdict({"a": [1.0, 1.01, 0.99, 1.0], "b": [1.2, 1.21, 1.19, 1.2]}, params, FLOPS, 4)
    assert clear.winner.params == {"X": 1} and clear.margin == pytest.approx(0.2) and clear.within_noise is False
    noisy = make_verdict({"a": [1.0, 1.3, 0.8, 1.1], "b": [1.05, 1.35, 0.85, 1.15]}, params, FLOPS, 4)
    assert noisy.within_noise is True and "within noise" in noisy.sentence({"X": (1, 2)})


def test_result_round_trips_and_renders(tmp_path):
    spec = toy_spec(tmp_path / "s")
    r = sweep(spec, tmp_path / "c", measurer=_measurer(), budget_configs=8, top=3)
    again = TuneResult.from_dict(r.to_dict())
    assert again == r
    table = to_table(r, top=5)
    assert len(table.rows) == 5 and table.rows[0]["tflops"] == r.best.tflops
    assert any("re-timed the top 3" in n for n in table.notes)
