"""Run results: real H100 results files load, round-trip, and render the numbers the run measured."""

import json
import statistics
from pathlib import Path

import pytest

from gemmprof.render.run_tables import run_table
from gemmprof.render.table import render_text, to_csv
from gemmprof.results.run import Measurement, load_run

FIX = Path(__file__).parent / "fixtures" / "results"


def test_real_results_file_round_trips(tmp_path):
    run = load_run(FIX / "h100_fix_4096.json")
    out = tmp_path / "again.json"
    run.save(out)
    again = load_run(out)
    assert again.to_dict() == run.to_dict()
    assert oct(out.stat().st_mode & 0o777) != "0o600"


def test_table_percentages_are_ratios_from_the_same_run():
    run = load_run(FIX / "h100_fix_4096.json")
    rows = {r["name"]: r for r in run_table(run).rows}
    sgemm = next(v for v in run.variants if v.name == "cublas_sgemm")
    naive = next(v for v in run.variants if v.name == "naive")
    median = statistics.median(naive.timing.samples_ms)
    assert rows["naive"]["median_ms"] == pytest.approx(median)
    assert rows["naive"]["tflops"] == pytest.approx(2 * 4096**3 / (median * 1e-3) / 1e12)
    assert rows["naive"]["pct_cublas"] == pytest.approx(100 * naive.achieved_flops / sgemm.achieved_flops)
    assert rows["naive"]["pct_peak"] == pytest.approx(100 * naive.achieved_flops / 66.9e12, rel=1e-3)


def test_failed_variants_are_never_reported_as_fast():
    run = load_run(FIX / "h100_ladder_4096_first.json")
    rows = {r["name"]: r for r in run_table(run).rows}
    assert rows["naive"]["status"] == "error"
    assert rows["naive"]["tflops"] is None and rows["naive"]["median_ms"] is None
    assert "compilation failed" in rows["naive"]["message"]
    text = render_text(run_table(run), width=250)
    assert "naive" in text and "error" in text
    assert "naive" in to_csv(run_table(run))


def test_spread_and_stability():
    steady = Measurement((1.0, 1.001, 0.999, 1.0, 1.0005))
    noisy = Measurement((1.0, 1.2, 0.9, 1.1, 1.0, 0.95))
    assert steady.stable and steady.spread < 0.02
    assert not noisy.stable
    assert noisy.median_ms == pytest.approx(statistics.median(noisy.samples_ms))


def test_not_a_results_file_is_one_clear_error(tmp_path):
    from gemmprof.errors import InputError

    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"kind": "something"}))
    with pytest.raises(InputError, match="not a gemmprof run results file"):
        load_run(bad)
    bad.write_text("{")
    with pytest.raises(InputError, match="line 1: not valid JSON"):
        load_run(bad)


def test_a_gzipped_results_file_loads_as_the_same_type_and_a_damaged_one_is_one_error(tmp_path):
    import gzip

    from gemmprof.errors import InputError
    from gemmprof.results.loading import load

    src = Path(__file__).parent / "fixtures" / "records" / "2026-11-22_h100_run" / "beta_1024.json"
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()))
    plain, unpacked = load(src), load(packed)
    assert type(unpacked) is type(plain) and unpacked.to_dict() == plain.to_dict()
    for bad in (b"not gzip at all", gzip.compress(src.read_bytes())[:40]):
        (tmp_path / "bad.json.gz").write_bytes(bad)
        with pytest.raises(InputError, match=r"bad\.json\.gz: not a readable gzip file"):
            load(tmp_path / "bad.json.gz")


def test_a_half_c_kernel_is_compared_with_the_half_c_baseline_and_the_type_round_trips():
    from gemmprof.results.run import RunResult, VariantResult
    from gemmprof.results.shape import GemmShape

    def row(name, dtype, kind, c_dtype="fp32"):
        return VariantResult(id="x", name=name, title=name, dtype=dtype, kind=kind, c_dtype=c_dtype)

    rows = [row("cublas_hgemm", "fp16", "baseline"), row("cublas_hgemm_cfp16", "fp16", "baseline", "fp16"),
            row("mine", "fp16", "user", "fp16")]
    run = RunResult(gpu_spec="h100", device={}, shape=GemmShape(64, 64, 64), alpha=1.0, beta=0.0, seed=1, timing_method={},
                    variants=rows)
    assert run.baseline_for("fp16").name == "cublas_hgemm"
    assert run.baseline_for("fp16", "fp16").name == "cublas_hgemm_cfp16"
    back = VariantResult.from_dict(rows[2].to_dict())
    assert back.c_dtype == "fp16" and "c_dtype" not in rows[0].to_dict()  # fp32 C files keep their old keys
    with pytest.raises(Exception, match=r"c_dtype: expected fp32, fp16 or bf16"):
        VariantResult.from_dict({**rows[2].to_dict(), "c_dtype": "int8"})


def test_an_element_that_lands_on_c0_within_tolerance_is_written_not_missing():
    import numpy as np

    from gemmprof.measure.verify import classify

    rng = np.random.default_rng(0)
    c0 = rng.random((64, 64)).astype(np.float32)
    ref = c0.astype(np.float64) * 1.5 + 0.25
    out = ref.astype(np.float32)
    out[3, 4] = c0[3, 4]  # unwritten where the answer is far from C0: caught
    ref[5, 6] = c0[5, 6] + 1e-7  # the answer rounds to C0 in the output's type: a correct write
    out[5, 6] = c0[5, 6]
    check = classify(out, ref, 2e-3, initial=c0)
    assert check.unwritten == 1 and check.first_bad == (3, 4)
