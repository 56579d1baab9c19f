"""What the Hopper rungs' GPU tests share: skipping off sm_90, one verified `gemmprof run` of a rung, and the
same-bits check of a kernel that reduces across CTAs (h8's and h11's split-K, h10's stream-K tail); and reading a
recorded run's rows by their split (`pct_by_split_k`)."""

import csv
import dataclasses
import json

import pytest
from clitools import invoke


def pct_by_split_k(path):
    """% of cuBLAS per SPLIT_K of the rows of a run written as `gemmprof show F --format csv` (the split read from
    each row's note; cuBLAS's row, which has none, left out)."""
    with open(path, newline="") as f:
        rows = [row for row in csv.DictReader(f) if not row["name"].startswith("cublas")]
    assert all(r["status"] == "ok" for r in rows), rows
    return {int(r["note"].split("SPLIT_K=")[1].split(")")[0].split(",")[0]): float(r["% cuBLAS"]) for r in rows}


def needs_hopper():
    import cupy

    if cupy.cuda.runtime.getDeviceProperties(0)["major"] != 9:
        pytest.skip("needs a Hopper GPU (sm_90a)")


# A run that only verifies: no cuBLAS, the burst regime (no warm-up of 2-20 s until the clock settles, which a
# verification does not need), a few timed calls (each checked at random, --checks).
VERIFY_ONLY = ("--no-cublas", "--regime", "burst", "--budget", "0.05", "--max-reps", "10")


def verified(runner, tmp_path, rung, args):
    """`gemmprof run RUNG ARGS` without cuBLAS: its one row, verified (status ok, relative error below 1e-3)."""
    out = tmp_path / f"{rung}.json"
    r = invoke(runner, ["run", rung, *args, *VERIFY_ONLY, "-o", str(out)])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(out.read_text())["variants"]
    assert row["status"] == "ok" and row["rel_error"] < 1e-3, (rung, args, row)
    return row


def same_bits_launch_after_launch(kernel, shape):
    """The kernel writes identical bits over NaN, over the sentinel and on three more launches (beta = 0, so C's
    old contents do not matter): its reduction adds in a fixed order and leaves its flags for the next launch.
    Returns the verified row."""
    import cupy

    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure.runner import Runner, RunOptions

    runner = Runner(get_gpu("h100"), RunOptions(shape=shape, seed=7, baselines=False))
    outs, verify = [], runner._verify

    def keeping_outputs(row, prepared):  # the arrays verification launches into, kept with their problem
        launch_for = prepared.launch_for

        def keeping(problem, out):
            outs.append((problem, out))
            return launch_for(problem, out)
        return verify(row, dataclasses.replace(prepared, launch_for=keeping))

    runner._verify = keeping_outputs
    row, prepared = runner.prepare_kernel(kernel)
    assert row.status == "ok" and prepared is not None, (row.status, row.message)
    (problem, over_nan), (_, over_sentinel) = outs[0], outs[1]
    first, second = over_nan.copy(), over_sentinel.copy()
    again = prepared.launch_for(problem, over_sentinel)
    for _ in range(3):
        again()
    cupy.cuda.Device().synchronize()
    bits = [a.view(cupy.uint32) for a in (first, second, over_sentinel)]
    assert bool((bits[0] == bits[1]).all()) and bool((bits[1] == bits[2]).all())
    return row
