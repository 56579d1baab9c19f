"""`gemmprof run --interleave`: variants verified one by one, then timed together in batches taken in turns.

No GPU: the timers are stand-ins on a simulated GPU whose clock falls as it runs, and the command runs with a
stand-in Runner, as tests/test_reliability.py does.
"""

import gzip
import json
import statistics
from pathlib import Path

import pytest

from gemmprof.cli import main
from gemmprof.measure import runner as runner_mod
from gemmprof.measure.timing import TimingConfig, round_robin, time_interleaved, turn_drift_note, turn_sizes
from gemmprof.results.run import RunResult, VariantResult
from gemmprof.results.stages import TURN_DRIFT_MIN_CALLS, Measurement


def test_round_robin_takes_turns_and_times_every_repetition():
    calls = []

    def timer(name):
        def timed(n):
            calls.append((name, n))
            return [1.0] * n
        return timed

    samples = round_robin([timer("a"), timer("b")], [5, 3], 3)
    assert calls == [("a", 1), ("b", 1), ("b", 1), ("a", 2), ("a", 2), ("b", 1)]  # rounds in turn: ab, ba, ab
    assert [len(s) for s in samples] == [5, 3]


@pytest.mark.parametrize("n", range(1, 10))
def test_each_variant_follows_every_other_equally_often(n):
    from collections import Counter

    from gemmprof.measure.timing import round_order

    rounds = n if n % 2 == 0 else 2 * n  # a balanced Latin square's rows: n of them, 2n for odd n
    follows = Counter()
    for r in range(rounds):
        row = round_order(n, r)
        assert sorted(row) == list(range(n))
        follows.update(zip(row, row[1:], strict=False))
    assert set(follows) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert len(set(follows.values())) <= 1  # every ordered pair alike


def test_a_light_kernel_lends_no_variant_a_lasting_lead():
    """A power-capped GPU: a batch that starts after the light kernel's runs 5% faster (the clock it left). Two
    identical heavy kernels beside it: in a fixed order the one after it would always gain; in balanced rounds
    they come out alike."""
    last = {"light": False}

    def timer(base_ms, light):
        def timed(n):
            lead = last["light"] and not light
            last["light"] = light
            return [base_ms * (0.95 if lead else 1.0)] * n
        return timed

    def medians():
        timers = [timer(0.3, True), timer(1.0, False), timer(1.0, False), timer(1.0, False)]
        config = TimingConfig(min_reps=300, max_reps=300, budget_s=0.0, interleave_rounds=12)
        return [statistics.fmean(m.samples_ms) for m in time_interleaved(timers, [lambda: None] * 4, config)]

    light, heavy1, heavy2, heavy3 = medians()
    assert heavy1 == pytest.approx(heavy2, rel=1e-9) == pytest.approx(heavy3, rel=1e-9)  # alike turns after it
    assert heavy1 < 1.0
    fixed = [0, 1, 2, 3]
    from unittest import mock

    with mock.patch("gemmprof.measure.timing.round_order", lambda n, r: fixed):
        light, heavy1, heavy2, heavy3 = medians()
    assert heavy1 / heavy2 < 0.96  # a fixed order: the kernel after the light one always gains


class _DriftingGpu:
    """Every launch takes `base_ms` stretched by a clock that falls 0.05% per launch, as a warming GPU's does."""

    def __init__(self):
        self.launches = 0

    def timer(self, base_ms):
        def timed(n):
            out = []
            for _ in range(n):
                self.launches += 1
                out.append(base_ms * (1 + 0.0005 * self.launches))
            return out
        return timed


def _medians(rounds):
    gpu = _DriftingGpu()
    config = TimingConfig(min_reps=200, max_reps=200, budget_s=0.0, interleave_rounds=rounds)
    measured = time_interleaved([gpu.timer(1.0), gpu.timer(1.0)], [lambda: None, lambda: None], config)
    assert [len(m.samples_ms) for m in measured] == [200, 200]
    return [statistics.median(m.samples_ms) for m in measured]


def test_interleaving_spreads_drift_over_identical_variants():
    first, second = _medians(rounds=1)  # one round: one variant after the other
    assert second / first > 1.08  # the kernel timed second pays for the clock's fall
    first, second = _medians(rounds=10)
    assert abs(second / first - 1) < 0.01


def test_time_interleaved_warms_up_then_reads_clocks_around_the_timed_loop():
    events = []
    config = TimingConfig(min_reps=4, max_reps=4, interleave_rounds=2)
    time_interleaved([lambda n: events.append(("a", n)) or [1.0] * n], [lambda: events.append("warm")], config,
                     on_start=lambda: events.append("start"), on_end=lambda: events.append("end"))
    # three probes, then the one repetition left of the four: in the second round (the first one's share is 0)
    assert events == ["warm", "start", ("a", 3), ("a", 1), "end"]


def test_both_ways_of_timing_in_turns_keep_where_the_turns_are():
    """time_interleaved marks its variants' turns as the runner's time_together does (variant_turns): after the
    probes, a turn per round; one round is no turns."""
    config = TimingConfig(min_reps=40, max_reps=40, interleave_rounds=2)
    (m,) = time_interleaved([lambda n: [1.0] * n], [lambda: None], config)
    assert (m.turns_from, m.turns) == (3, (18, 19)) and m.turn_drift == 0.0
    (alone,) = time_interleaved([lambda n: [1.0] * n], [lambda: None], TimingConfig(min_reps=40, max_reps=40))
    assert (alone.turns_from, alone.turns, alone.turn_drift) == (0, (), None)


def test_timing_method_says_interleaved_only_when_it_was():
    assert "interleave_rounds" not in TimingConfig().to_dict()
    d = TimingConfig(interleave_rounds=10).to_dict()
    assert d["interleave_rounds"] == 10 and "balanced Latin square" in d["method"]


# -- the runner: only verified variants are timed, each batch in its own NVTX range ---------------------------
def _row(name):
    return VariantResult(id=name, name=name, title=name, dtype="fp32", nvtx_range=f"gemmprof {name} 64x64x64")


def _numpy_runner(monkeypatch, seen, **timing):
    """A real Runner over the NumPy stand-in for CuPy (tests/numpy_cupy.py): launches run on the CPU."""
    import sys

    import numpy_cupy

    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.results.shape import GemmShape

    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy.make(seen))
    monkeypatch.setattr(runner_mod.Runner, "clock_reader", lambda self: None)
    opts = runner_mod.RunOptions(shape=GemmShape(64, 48, 32), seed=1, timing=TimingConfig(**timing))
    return runner_mod.Runner(get_gpu("h100"), opts)


def _gemm(name, calls):
    """launch_for(problem, out) of a right fp32 GEMM that notes each call."""
    def launch_for(problem, out):
        def launch():
            calls.append(name)
            out[...] = problem.alpha * (problem.A @ problem.B)
        return launch
    return launch_for


def test_runner_times_the_verified_variants_together(monkeypatch):
    seen, calls = [], []
    r = _numpy_runner(monkeypatch, seen, min_reps=6, max_reps=6, flush_l2=False, interleave_rounds=3, checks=0)
    prepared = [runner_mod.Prepared(_gemm(n, calls), "fp32", "fp32", ("row", None), 1e-4) for n in ("fast", "slow")]
    rows = [_row("fast"), _row("failed"), _row("slow")]
    rows[1].status = "FAIL"
    r.time_together([(rows[0], prepared[0]), (rows[1], None), (rows[2], prepared[1])])
    assert rows[1].timing is None and rows[1].status == "FAIL"
    assert all(len(v.timing.samples_ms) == 6 and v.passed for v in (rows[0], rows[2]))
    pushed = [name for what, name in seen if what == "push"]
    # each variant's warm-up and probes in its own range, then the three rounds taken in turns (ab, ba, ab)
    f, s = "gemmprof fast 64x64x64", "gemmprof slow 64x64x64"
    assert pushed[-6:] == [f, s, s, f, f, s]
    assert calls[-6:] == ["fast", "slow", "slow", "fast", "fast", "slow"]


def test_a_gemm_right_only_on_its_verified_call_fails_with_that_reason(monkeypatch):
    """Output cached by input pointer: the first (verified) call computes, later calls return the cached C. The
    timed calls' inputs differ (a fresh row of A each call), so a checked timed call is wrong."""
    seen, cache = [], {}

    def cached(problem, out):
        def launch():
            key = id(problem.A)
            if key not in cache:
                cache[key] = problem.alpha * (problem.A @ problem.B)
            out[...] = cache[key]
        return launch

    r = _numpy_runner(monkeypatch, seen, min_reps=10, max_reps=10, budget_s=0.0)
    row = _row("cached")
    row, prepared = r._verify(row, runner_mod.Prepared(cached, "fp32", "fp32", ("row", None), 1e-4))
    assert row.status == "ok" and prepared is not None  # right on the verified call
    r._time(row, prepared)
    assert row.status == "FAIL" and row.checks.wrong and "right on its verified call but wrong on" in row.message
    assert row.checks.checked  # chance alone picked none: one more timed call was checked


# -- the command ------------------------------------------------------------------------------------------------
class _StandInRunner:
    """Verifies nothing and times nothing; records the order of the calls."""

    calls: list = []
    clock_status = "stand-in: no clocks"

    def __init__(self, gpu_spec, options):
        self.seed, self.options = 1, options

    def clock_reader(self):
        return None

    def close(self):
        pass

    def prepare_kernel(self, kernel, compiler=None):
        type(self).calls.append(("prepare", kernel.spec.name))
        s = kernel.spec
        return VariantResult(id=s.id, name=s.name, title=s.title, dtype=s.dtype), s.name

    def run_kernel(self, kernel, compiler=None):
        raise AssertionError("--interleave must not time variants one by one")

    def time_together(self, prepared):
        from gemmprof.results.run import Measurement

        type(self).calls.append(("time", [launch for _, launch in prepared]))
        for row, _ in prepared:
            row.timing = Measurement((1.0, 1.1, 1.2))


@pytest.fixture
def stand_in(monkeypatch):
    import gemmprof.commands.run as run_cmd

    _StandInRunner.calls = []
    monkeypatch.setattr(run_cmd, "require_cupy", lambda: None)
    monkeypatch.setattr(run_cmd, "_device_name", lambda: None)
    monkeypatch.setattr(runner_mod, "Runner", _StandInRunner)
    monkeypatch.setattr(runner_mod, "device_info", lambda: {"name": "stand-in"})
    return _StandInRunner


def test_run_interleave_verifies_all_then_times_them_together(stand_in, tmp_path):
    out = tmp_path / "results.json"
    main(["run", "1", "2", "3", "--no-cublas", "--size", "256", "--interleave", "-o", str(out)])
    assert stand_in.calls == [("prepare", "naive"), ("prepare", "gmem_coalescing"), ("prepare", "smem_caching"),
                              ("time", ["naive", "gmem_coalescing", "smem_caching"])]
    saved = RunResult.from_dict(json.loads(out.read_text()))
    assert all(v.timing for v in saved.variants)
    assert saved.timing_method["interleave_rounds"] == 10 and "balanced Latin square" in saved.timing_method["method"]


def test_interleave_with_launch_once_is_refused(stand_in, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "1", "--no-cublas", "--interleave", "--launch-once"])
    assert exit_.value.code == 2 and stand_in.calls == []
    assert "--interleave and --launch-once" in capsys.readouterr().err


@pytest.mark.gpu
def test_interleaved_run_on_the_gpu(tmp_path):
    """On the GPU: two rungs and cuBLAS verified, then timed in turns; every row timed, each with the clock it held
    during its own batches."""
    out = tmp_path / "r.json"
    main(["run", "1", "2", "--size", "512", "--budget", "0.05", "--interleave", "--regime", "burst",
          "-o", str(out)])  # exits only on failure
    saved = RunResult.from_dict(json.loads(out.read_text()))
    assert saved.variants and all(v.passed and v.timing and v.timing.median_ms > 0 for v in saved.variants)
    assert all(v.clocks and v.clocks.clock_mhz > 0 and v.checks.passed for v in saved.variants)


def test_ctrl_c_during_the_interleaved_timing_leaves_no_row_that_reads_as_timed(stand_in, monkeypatch, tmp_path):
    def interrupted(self, prepared):
        raise KeyboardInterrupt

    monkeypatch.setattr(_StandInRunner, "time_together", interrupted)
    out = tmp_path / "results.json"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "1", "2", "--no-cublas", "--size", "256", "--interleave", "-o", str(out)])
    assert exit_.value.code == 130
    saved = RunResult.from_dict(json.loads(out.read_text()))
    assert [v.status for v in saved.variants] == ["error", "error"]
    assert all("the run stopped before or during the interleaved timing" in v.message for v in saved.variants)


def test_repetitions_fill_the_budget_with_a_floor_that_yields_for_slow_kernels():
    from gemmprof.measure.timing import repetitions

    config = TimingConfig()  # budget 1 s, at least 10, at most 200
    assert repetitions([2.7, 2.7, 2.7], config) == 200  # fast: max_reps
    assert repetitions([27.5, 27.5, 27.5], config) == 36  # the budget decides
    assert repetitions([150.0, 150.0, 150.0], config) == 10  # 10 x 0.15 s <= 2 s: min_reps holds
    assert repetitions([275.0, 275.0, 275.0], config) == 5  # 10 x 0.275 s > 2 s: at least 5
    assert repetitions([275.0, 275.0, 275.0], TimingConfig(min_reps=3)) == 3  # never more than min_reps asks
    assert repetitions([275.0, 275.0, 275.0], TimingConfig(min_reps=8, max_reps=8, budget_s=0.0)) == 8  # tune's


def test_ctrl_c_while_verifying_leaves_no_verified_row_that_reads_as_finished(stand_in, monkeypatch, tmp_path):
    calls = []
    original = _StandInRunner.prepare_kernel

    def second_interrupts(self, kernel, compiler=None):
        calls.append(kernel)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, kernel, compiler)

    monkeypatch.setattr(_StandInRunner, "prepare_kernel", second_interrupts)
    out = tmp_path / "results.json"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "1", "2", "--no-cublas", "--size", "256", "--interleave", "-o", str(out)])
    assert exit_.value.code == 130
    saved = RunResult.from_dict(json.loads(out.read_text()))
    assert [v.status for v in saved.variants] == ["error"] and saved.variants[0].timing is None


# -- a figure that depends on the turn's length ------------------------------------------------------------------
BUDGET_RUNS = Path(__file__).resolve().parent / "fixtures" / "records" / "2026-11-29_h200_rule7"


def _recorded(path):
    """A recorded run in turns (H200, fp16, 10 rounds), each row's timing with its turns marked as round_robin timed
    them: the three probes first, then the rounds (runs since write them themselves)."""
    with gzip.open(path, "rt") as f:
        run = RunResult.from_dict(json.load(f))
    assert run.timing_method["interleave_rounds"] == 10
    for v in run.variants:
        v.timing = Measurement(v.timing.samples_ms, 3, tuple(turn_sizes(len(v.timing.samples_ms) - 3, 10)))
    return run


def _turns_of(label, budget):
    """Each row's timing of a budget run (plan h9 h12 beside cuBLAS), its turns marked."""
    return {v.name: v.timing for v in _recorded(BUDGET_RUNS / f"budget_fp16_{label}_{budget}.json.gz").variants}


def test_h9_slowing_after_a_third_of_each_1_s_turn_is_named_and_no_other_row_is():
    """At 1 s per variant (turns of ~60 launches, 0.1 s) h9's launches ran 1.67 ms early in each turn and 1.83 ms
    late; cuBLAS, h12 and the plan's row (h12) within 2.2%. At 0.3 s (turns of ~17) h9 never reached its slow state."""
    long = {name: turn_drift_note(m) for name, m in _turns_of("8192x8192x8192", 1).items()}
    assert long["pingpong"] is not None and "slower" in long["pingpong"]
    assert "ran 9.9% slower than early ones (median 1.830 against 1.666 ms)" in long["pingpong"]
    assert [name for name, note in long.items() if note] == ["pingpong"]
    other = {name: turn_drift_note(m) for name, m in _turns_of("16384x4096x14336", 1).items()}
    assert [name for name, note in other.items() if note] == ["pingpong"] and "11.4% slower" in other["pingpong"]
    short = {name: turn_drift_note(m) for name, m in _turns_of("8192x8192x8192", 0.3).items()}
    assert all(sum(m.turns) >= 10 * TURN_DRIFT_MIN_CALLS for m in _turns_of("8192x8192x8192", 0.3).values())
    assert short == dict.fromkeys(short)  # every turn judged, none drifted


@pytest.mark.parametrize(("early", "late", "drifted"), [(1.0, 1.0, None), (1.0, 1.04, None), (1.0, 1.06, "slower"),
                                                        (1.0, 0.9, "faster"), (1.0, 0.96, None)])
def test_turn_drift_compares_the_first_and_last_third_of_each_turn(early, late, drifted):
    sizes = turn_sizes(90, 3)  # three turns of 30
    samples = [early if i % 30 < 15 else late for i in range(90)]
    note = turn_drift_note(Measurement(tuple(samples), 0, tuple(sizes)))
    assert (note is None) if drifted is None else (drifted in note)


def test_turns_too_short_to_split_in_thirds_are_not_judged():
    sizes = turn_sizes(30, 3)  # turns of 10 < TURN_DRIFT_MIN_CALLS
    assert max(sizes) < TURN_DRIFT_MIN_CALLS
    assert turn_drift_note(Measurement(tuple(1.0 if i % 10 < 5 else 2.0 for i in range(30)), 0, tuple(sizes))) is None


def test_round_robin_times_the_turns_turn_sizes_gives():
    got = []
    round_robin([lambda n: got.append(n) or [1.0] * n], [23], 4)
    assert got == [n for n in turn_sizes(23, 4) if n] and sum(turn_sizes(23, 4)) == 23


def test_a_drifting_variant_in_turns_says_so_in_its_note(monkeypatch):
    """The runner's interleaved timing judges each variant's turns (timing.turn_drift_note) and a drift reaches the
    row's note, the row still ok: its figure is right, and depends on the turn's length."""
    from gemmprof.measure import timing

    judged = []

    def drift(m):
        judged.append(m.turns)
        return "in turns, its launches late in each turn ran 9.8% slower" if len(judged) == 2 else None

    monkeypatch.setattr(timing, "turn_drift_note", drift)
    seen, calls = [], []
    r = _numpy_runner(monkeypatch, seen, min_reps=40, max_reps=40, flush_l2=False, interleave_rounds=2, checks=0)
    prepared = [runner_mod.Prepared(_gemm(n, calls), "fp32", "fp32", ("row", None), 1e-4) for n in ("a", "b")]
    rows = [_row("a"), _row("b")]
    r.time_together([(rows[0], prepared[0]), (rows[1], prepared[1])])
    assert judged == [tuple(turn_sizes(37, 2))] * 2  # 40 launches less the 3 probes, in 2 turns
    assert all(v.status == "ok" for v in rows)
    # each row's timing keeps where its turns are (after the 3 probes), so a later reader can judge them again
    assert all((v.timing.turns_from, v.timing.turns) == (3, (18, 19)) for v in rows)
    assert "9.8% slower" not in (rows[0].message or "") and rows[1].message.endswith("9.8% slower")


def _h9_rows_at_1_s():
    """h9's rows in the record's other runs at 1 s per variant (10 rounds): its own, and the plan's where the plan
    ran h9 (rule 7 as it was then), each row's timing with its turns marked."""
    out = {}
    for path in sorted(BUDGET_RUNS.glob("call[125]_rule7_*.json.gz")):
        run = _recorded(path)
        assert "--budget 1 " in run.command
        for v in run.variants:
            if v.name == "pingpong" or (v.plan is not None and v.plan.rung == "h9"):
                out[(path.stem, v.name)] = v.timing
    return out


def test_every_h9_row_at_1_s_ran_slower_late_in_its_turns_and_six_past_the_note():
    """The record's claim: all 20 of h9's rows at 1 s ran slower in the last third of their turns than in the first
    (1.2-9.5%), six of them past TURN_DRIFT, which the note names."""
    rows = _h9_rows_at_1_s()
    assert len(rows) == 20
    changes = {key: m.turn_drift for key, m in rows.items()}
    assert all(0.01 < c < 0.1 for c in changes.values()), changes
    named = {key for key, m in rows.items() if turn_drift_note(m)}
    assert len(named) == 6 and named == {key for key, c in changes.items() if c > 0.05}


def test_a_run_file_keeps_its_turns_and_reads_them_back_as_the_same_drift(tmp_path):
    run = _recorded(BUDGET_RUNS / "budget_fp16_8192x8192x8192_1.json.gz")
    h9 = next(v for v in run.variants if v.name == "pingpong")
    assert round(h9.timing.turn_drift, 3) == 0.099  # 1.830 against 1.666 ms, as the run's note said
    again = RunResult.from_dict(json.loads(json.dumps(run.to_dict())))
    assert [v.timing for v in again.variants] == [v.timing for v in run.variants]
    assert [v.timing.turn_drift for v in again.variants] == [v.timing.turn_drift for v in run.variants]
    untimed_in_turns = Measurement((1.0, 2.0, 3.0))
    assert untimed_in_turns.turn_drift is None and "turns" not in untimed_in_turns.to_dict()  # files as before


@pytest.mark.parametrize(("edit", "problem"), [
    ({"turns": [30, 40]}, "timing.turns: 70 launches from sample 3 on, past its 60 samples"),
    ({"turns": [10, -1]}, "timing.turns: expected a list of integers >= 0"),
    ({"turns": "10"}, "timing.turns: expected a list of integers >= 0"),
    ({"turns_from": -2}, "timing.turns_from: expected an integer >= 0"),
])
def test_turns_that_do_not_fit_the_samples_are_one_clear_error(edit, problem):
    from gemmprof.errors import InputError

    timing = {"samples_ms": [1.0] * 60, "turns_from": 3, "turns": [20, 20]} | edit
    with pytest.raises(InputError) as e:
        Measurement.from_dict(timing, "variants[1].timing")
    assert str(e.value).startswith(f"variants[1].{problem}"), str(e.value)


def test_a_sweep_names_the_variant_whose_figure_depends_on_the_turns():
    """The sweep's summary keeps each cell's drift (late launches of its turns against early ones) and its headline
    names the variants past TURN_DRIFT, with the range: h9 alone in the 1 s runs (8192^3 and 16384 x 4096 x 14336),
    none in the 0.3 s one, whose turns never reach h9's slow state."""
    from gemmprof.render.sweep_tables import headline_table
    from gemmprof.results.sweep import SweepSummary, summarize

    def run_of(label, budget):
        return f"{label}_{budget}", _recorded(BUDGET_RUNS / f"budget_fp16_{label}_{budget}.json.gz")

    long = summarize([run_of("8192x8192x8192", 1), run_of("16384x4096x14336", 1)], "fp16")
    assert list(long.drifted()) == ["pingpong"]
    assert [round(c.drift, 3) for c in long.drifted()["pingpong"]] == [0.099, 0.114]
    assert all(c.drift is not None for c in long.cells)  # every row judged, the others within 5%
    again = SweepSummary.from_dict(json.loads(json.dumps(long.to_dict())), "again")
    assert again.drifted() == long.drifted()
    notes = headline_table([long]).notes
    assert any("pingpong at 2 of 2 shapes (9.9%-11.4% slower late)" in n for n in notes), notes
    short = summarize([run_of("8192x8192x8192", 0.3)], "fp16")
    assert short.drifted() == {} and not any("depend on how long a turn" in n for n in headline_table([short]).notes)
