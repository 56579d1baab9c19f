"""explain --callable: a Python function's limiters from ncu's measurement alone (gemmprof.model.explain_measured), on
real profiles of the Triton and torch examples (tests/fixtures/explain/PROVENANCE.md) and on a stand-in made from
the Triton one for M = 64; the evidence it lacks said; bad input as one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from clitools import invoke
from conftest import FIXTURES

from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.model.explain import Explanation
from gemmprof.model.explain_measured import explain_launch
from gemmprof.results.profile import ProfileResults
from gemmprof.results.shape import GemmShape

ROOT = Path(__file__).resolve().parents[1]
TRITON = f"{ROOT}/examples/triton_matmul/triton_matmul.py:matmul"
TORCH = f"{ROOT}/examples/torch_matmul/torch_matmul.py:matmul"
TRITON_4096 = FIXTURES / "explain" / "profile_triton_fp16_4096.json.gz"
TWO_KERNELS = FIXTURES / "explain" / "profile_callables_fp16_4096.json.gz"


def _explained(runner, *args):
    r = invoke(runner, ["explain", *map(str, args), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    tables = doc["tables"] if "tables" in doc else [doc]
    return [Explanation.from_dict(t["explanation"]) for t in tables]


def test_the_triton_kernel_at_4096_is_limited_by_its_tensor_pipe(runner):
    (e,) = _explained(runner, "--callable", TRITON, "--profile-results", TRITON_4096)
    # shape, dtype and GPU from the profile: the Triton launch at 4096 in fp16 on the H100 it was made on
    assert (e.name, e.dtype, e.shape, e.gpu) == ("triton_matmul.matmul", "fp16", (4096, 4096, 4096), "H100 SXM")
    assert e.measured_s == pytest.approx(220544e-9)
    top = e.top
    assert top.kind == "tensor_pipe" and top.source == "ncu"
    assert top.evidence.startswith("ncu: tensor pipe 75.4% busy: 0.166 ms of the 0.221 ms")
    assert top.bound_s == pytest.approx(220544e-9 * 0.7539, rel=1e-3)
    kinds = [lim.kind for lim in e.limiters]
    assert set(kinds) == {"tensor_pipe", "latency", "waves", "dram", "l2"}
    latency = next(lim for lim in e.limiters if lim.kind == "latency")
    assert "occupancy 12.5% achieved of 12.5% theoretical, limited by registers, shared memory" in latency.evidence
    assert "stalls: wait 38%, dispatch_stall 23%, barrier 16%" in latency.evidence
    waves = next(lim for lim in e.limiters if lim.kind == "waves")
    assert waves.evidence.startswith("512 blocks launched on 132 SMs x 1 block(s) each: 3.88 waves, 97%")
    l2 = next(lim for lim in e.limiters if lim.kind == "l2")
    assert "1.25 GB through L2" in l2.evidence
    lacks = next(n for n in e.notes if n.startswith("evidence it lacks: "))
    assert "SASS" in lacks and "access or traffic model" in lacks
    assert any("matmul_kernel, grid (512, 1, 1), block (256, 1, 1), 196 registers" in n for n in e.notes)


def test_a_callable_of_two_kernels_is_explained_by_its_longest_and_the_other_is_named(runner):
    (e,) = _explained(runner, "--callable", TORCH, "--profile-results", TWO_KERNELS)
    assert e.name == "torch_matmul.matmul" and e.measured_s == pytest.approx(180800e-9)
    assert e.top.kind == "tensor_pipe" and "95.0% busy" in e.top.evidence
    note = next(n for n in e.notes if "more kernel" in n)
    assert note.startswith("1 more kernel(s) of this callable at this shape take 17% of its GPU time:")
    assert "unrolled_elementwise_kernel" in note and "37.1 us" in note


def _m64_stand_in():
    """The Triton launch at 4096, made into a stand-in of the same kernel at M = 64: its 128 x 256 tiles give
    1 x 16 = 16 blocks; the tensor pipe executes whole 128-row tiles (twice the GEMM's FLOPs); the time and the
    unit shares are invented, of a plausible size (a small grid keeps the averages over all SMs low)."""
    p = ProfileResults.load(TRITON_4096)
    la = copy.deepcopy(next(x for x in p.launches if x.variant == "triton_matmul.matmul"))
    shape = GemmShape(64, 4096, 4096)
    la.shape, la.grid = shape, (16, 1, 1)
    la.duration_ns, la.tensor_pipe_pct, la.sol_dram_pct = 30000.0, 6.0, 40.0
    la.dram_bytes, la.l2_bytes = 36e6, 70e6
    la.flops_tensor = 2 * 128 * 4096 * 4096
    la.flops_model = 2 * 64 * 4096 * 4096
    return la, shape


def test_the_stand_in_at_m64_names_the_idle_sms_and_the_padding():
    la, shape = _m64_stand_in()
    e = explain_launch(la, shape, "fp16", get_gpu("h100"), "triton_matmul.matmul")
    assert e.top.kind == "waves"
    assert e.top.evidence == ("16 blocks launched on 132 SMs x 1 block(s) each: 0.12 waves, 12% of the SMs' time "
                              "used (116 SM slots idle)")
    assert "split-K" in e.top.lift
    # lifting it would at most reach what the whole GPU needs: the minimum bytes at the measured DRAM rate
    gpu = get_gpu("h100")
    floor = (64 * 4096 * 2 + 4096 * 4096 * 2 + 64 * 4096 * 4) / (gpu.measured["dram_bandwidth_gbs"] * 1e9)
    assert e.top.gain == pytest.approx(min(132 / 16, 30e-6 / floor))
    padding = next(lim for lim in e.limiters if lim.kind == "padding")
    assert "2.00x the GEMM's 2 GFLOP" in padding.evidence and "swap A and B" in padding.lift
    assert padding.gain is None  # the pipe is 6% busy: less math would not make it faster


def test_what_the_profile_lacks_is_said_and_its_limiters_left_out():
    la, shape = _m64_stand_in()
    la.grid, la.stalls, la.l2_bytes, la.tensor_pipe_pct = None, {}, None, None
    la.occupancy.achieved_pct = None
    e = explain_launch(la, shape, "fp16", get_gpu("h100"), "x")
    kinds = {lim.kind for lim in e.limiters}
    assert "waves" not in kinds and "l2" not in kinds and "tensor_pipe" not in kinds and "sm_throughput" in kinds
    lacks = next(n for n in e.notes if n.startswith("evidence it lacks: "))
    for missing in ("the launched grid", "L2 bytes", "stall reasons", "achieved occupancy", "tensor-pipe utilisation"):
        assert missing in lacks
    la.duration_ns = None
    empty = explain_launch(la, shape, "fp16", get_gpu("h100"), "x")
    assert empty.limiters == () and "the duration" in empty.notes[-1]


@pytest.mark.parametrize("args,message", [
    (["--callable", TRITON], "--callable: explain needs ncu's measurement of it: --profile-results FILE.json"),
    (["--callable", TRITON, "--profile-results", TWO_KERNELS, "--size", "64"],
     "--profile-results: no launch of triton_matmul.matmul at 64x64x64 (profile it with `gemmprof profile --callable"),
    (["--callable", f"{ROOT}/examples/torch_matmul/torch_matmul.py:nope", "--profile-results", TRITON_4096],
     "--profile-results: no launch of torch_matmul.nope"),
    (["5", "--callable", TRITON, "--profile-results", TRITON_4096], "--callable: explain Python callables on their own"),
    (["--callable", TRITON, "--profile-results", TRITON_4096, "--results", FIXTURES / "explain" / "run_ladder_4096.json"],
     "--callable with --results"),
    (["--callable", "/no/such.py:f", "--profile-results", TRITON_4096], "--callable /no/such.py:f: /no/such.py does not exist"),
    (["5", "--c-dtype", "fp16"], "--c-dtype fp16: only for --callable functions"),
])
def test_bad_input_is_one_line(runner, args, message):
    r = invoke(runner, ["explain", *map(str, args)])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert r.output.startswith(f"error: {message}"), r.output


def test_both_callables_of_one_profile_and_an_explicit_gpu(runner):
    es = _explained(runner, "--callable", TRITON, "--callable", TORCH, "--profile-results", TWO_KERNELS, "--gpu", "h200")
    h200 = get_gpu("h200")
    assert [e.name for e in es] == ["triton_matmul.matmul", "torch_matmul.matmul"] and {e.gpu for e in es} == {h200.name}
    l2_bw = h200.l2_bandwidth_gbs * 1e9 if h200.l2_bandwidth_gbs else 5120 * h200.boost_clock_mhz * 1e6
    assert f" TB/s of {l2_bw / 1e12:.1f} TB/s (" in next(lim for lim in es[0].limiters if lim.kind == "l2").evidence


def test_measure_profiles_the_callable_in_a_child_and_explains_that(runner, monkeypatch):
    """--measure: `gemmprof profile --callable ... --save` in a child (here a stand-in writing the M = 64 profile),
    then the same explanation as from a saved profile."""
    import subprocess

    la, shape = _m64_stand_in()
    seen = []

    def child(cmd, **kwargs):
        seen.append(cmd)
        ProfileResults([la], gpu="NVIDIA H100 80GB HBM3", gpu_spec="h100_sxm", shape=shape).save(
            cmd[cmd.index("--save") + 1])
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", child)
    (e,) = _explained(runner, "--callable", TRITON, "--dtype", "bf16", "-m", "64", "-n", "4096", "-k", "4096",
                      "--c-dtype", "bf16", "--measure")
    (cmd,) = seen
    assert cmd[2:6] == ["gemmprof", "profile", "--callable", TRITON]
    rest = cmd[cmd.index("profile"):]  # after `python -m gemmprof`
    assert rest[rest.index("-m") + 1:rest.index("-m") + 6] == ["64", "-n", "4096", "-k", "4096"]
    assert cmd[cmd.index("--dtype") + 1] == "bf16" and cmd[cmd.index("--c-dtype") + 1] == "bf16"
    assert e.top.kind == "waves" and e.shape == (64, 4096, 4096) and e.dtype == "bf16" and e.gpu == "H100 SXM"
