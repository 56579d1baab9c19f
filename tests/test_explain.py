"""gemmprof explain (issue 27): limiters ranked from the model, SASS and ncu; the ladder check on the H100 records
copied into tests/fixtures/explain (PROVENANCE.md); rungs 15 and h6 recommend nothing they already do; a user's
own spec. CPU only (the --spec test compiles with nvcc)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import invoke

import gemmprof
from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.measure.explain_inputs import explain_kernels, explain_ladder
from gemmprof.model.explain import Explanation
from gemmprof.model.explain_ladder import STEPS, TOLERANCE, LadderCheck
from gemmprof.model.explain_techniques import FP16, FP32, RUNG_TECHNIQUES, TECHNIQUES, applied_by
from gemmprof.model.traffic import GemmShape

FIX = Path(__file__).parent / "fixtures" / "explain"
RUNS = {"fp32": ["run_ladder_4096.json", "run_fp32top_4096.json"], "fp16": ["run_ladder_4096.json",
                                                                            "run_hopper_fp16_4096.json"]}
PROFILES = {"fp32": ["profile_fp32_4096.json", "profile_fp32top_4096.json"], "fp16": ["profile_fp16_4096.json"]}
SHAPE = GemmShape(4096, 4096, 4096)


def _ladder_args(ladder):
    args = ["explain", "--ladder", ladder, "--format", "json"]
    for f in RUNS[ladder]:
        args += ["--results", str(FIX / f)]
    for f in PROFILES[ladder]:
        args += ["--profile-results", str(FIX / f)]
    return args


def _medians(ladder):
    """Each rung's median per run file, read straight from the JSON (latest run first), as the check must use."""
    dtype = "fp32" if ladder == "fp32" else "fp16"
    docs = sorted((json.loads((FIX / f).read_text()) for f in RUNS[ladder]), key=lambda d: d["created"],
                  reverse=True)
    return [{v["id"]: v["timing"]["median_ms"] for v in d["variants"]
             if v["dtype"] == dtype and v.get("status") == "ok" and v.get("timing")} for d in docs]


def _expected_speedup(step, medians):
    here, there = step.split(" -> ")
    for times in medians:
        a = [times[r] for r in here.split("/") if r in times]
        b = [times[r] for r in there.split("/") if r in times]
        if a and b:
            return min(a) / min(b)
    return None


@pytest.mark.parametrize("ladder", ["fp32", "fp16"])
def test_ladder_check_on_the_h100_records(runner, ladder):
    r = invoke(runner, _ladder_args(ladder))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    check = LadderCheck.from_dict(doc["ladder_check"])
    assert [s.step for s in check.steps] == [f"{a} -> {b}" for a, b in zip(STEPS[ladder][:-1], STEPS[ladder][1:],
                                                                           strict=True)]
    medians = _medians(ladder)
    for s in check.steps:
        # the measured speedup is the runs' own ratio; match and within follow from the row's own figures
        assert s.measured_speedup == pytest.approx(_expected_speedup(s.step, medians), rel=1e-9)
        assert s.match == (s.technique in s.next_techniques)
        assert s.within == (abs(s.predicted_speedup / s.measured_speedup - 1) <= TOLERANCE)
        assert s.predicted_speedup > 0
        assert s.next_techniques == tuple(dict.fromkeys(
            t for r in s.step.split(" -> ")[1].split("/") for t in RUNG_TECHNIQUES[r]))
        if not (s.match and s.within):
            assert s.why, f"{s.step} misses without saying why"
    # the issue's Done-when targets, on these records
    assert check.match_share >= 0.8
    assert check.within_share >= 2 / 3
    assert check.meets_targets
    assert doc["rows"] and len(doc["rows"]) == len(check.steps)


def test_ladder_check_library_matches_the_command():
    gpu = get_gpu("h100")
    runs = [gemmprof.load(FIX / f) for f in RUNS["fp32"]]
    profiles = [gemmprof.load(FIX / f) for f in PROFILES["fp32"]]
    check, explanations = explain_ladder("fp32", runs, profiles, gpu)
    assert LadderCheck.from_dict(json.loads(json.dumps(check.to_dict()))) == check
    e = explanations["3"]
    assert Explanation.from_dict(json.loads(json.dumps(e.to_dict()))) == e
    # with ncu's duration, latency is assessed; rung 1's top limiter is the L1 pipe its uncoalesced A loads fill
    assert e.measured_s == pytest.approx(profiles[0].launches[3].duration_ns * 1e-9)
    assert "latency" not in e.needs_measurement
    assert explanations["1"].top.kind == "l1_wavefronts" and explanations["1"].top.technique == "coalescing"


def _explain_rung(rung, run_file, profile_file=None):
    gpu = get_gpu("h100")
    kernel = bind(specmod.select([rung])[0])
    profiles = [gemmprof.load(FIX / profile_file)] if profile_file else []
    return explain_kernels([kernel], SHAPE, gpu, [gemmprof.load(FIX / run_file)], profiles)[0]


@pytest.mark.parametrize("rung,run_file,profile_file", [("15", "run_fp32top_4096.json", "profile_fp32top_4096.json"),
                                                         ("h6", "run_hopper_fp16_4096.json", None)])
def test_the_tops_of_the_ladders_recommend_nothing_they_already_do(rung, run_file, profile_file):
    e = _explain_rung(rung, run_file, profile_file)
    assert set(RUNG_TECHNIQUES[rung]) <= set(e.applied)
    ladder = FP32 if rung in FP32 else FP16
    for lim in e.limiters:
        assert lim.technique is None or lim.technique not in e.applied or lim.lift.startswith("further"), lim
        if lim.rung in ladder:
            assert ladder.index(lim.rung) > ladder.index(rung), lim
    assert e.limiters and e.measured_s is not None


def test_offline_explain_says_what_needs_a_measurement():
    gpu = get_gpu("h100")
    run = gemmprof.load(FIX / "run_ladder_4096.json")
    kernel = bind(specmod.select(["5"])[0])
    e = explain_kernels([kernel], SHAPE, gpu, [run])[0]
    assert e.measured_s == pytest.approx(next(v for v in run.variants if v.id == "5").median_s)
    sources = {lim.kind: lim.source for lim in e.limiters}
    assert sources["latency"] == "timing" and sources["issue"] == "sass" and sources["l1_wavefronts"] == "model"


def test_files_that_hold_nothing_for_the_kernel_are_said(runner):
    r = invoke(runner, ["explain", "h2", "--size", "4096", "--results", str(FIX / "run_hopper_fp16_4096.json"),
                        "--profile", str(FIX / "profile_fp32_4096.json"), "--format", "json"])
    assert r.exit_code == 0, r.output
    # --profile is the old spelling of --profile-results: it still reads the file, and says so on stderr
    assert "--profile FILE.json is the old spelling of --profile-results" in r.stderr
    notes = json.loads(r.stdout)["explanation"]["notes"]
    assert any(n.startswith("--results: no verified run of wmma_multistage at 4096x4096x4096") for n in notes)
    assert "--profile-results: no launch of wmma_multistage at 4096x4096x4096" in notes


def test_applied_techniques_accumulate_along_the_ladder():
    assert applied_by("1") == ()
    assert "coalescing" in applied_by("3") and "register_tiling_2d" not in applied_by("4")
    assert set(applied_by("15")) >= {t for r in FP32 for t in RUNG_TECHNIQUES[r]}
    for r in (*FP32, *FP16):
        assert all(t in TECHNIQUES for t in RUNG_TECHNIQUES[r]), r


USER_CU = """
extern "C" __global__ void my_sgemm(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
    int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = beta == 0.f ? alpha * acc : alpha * acc + beta * C[row * N + col];
}
"""
USER_YAML = """
file: my_sgemm.cu
entry: my_sgemm
grid: ["cdiv(N, 32)", "cdiv(M, 32)"]
block: [32, 32]
accesses:
  loop: {var: i, trips: K}
  list:
    - {name: A (broadcast), array: A, space: global, op: load, bytes: 4, index: "(by * 32 + ty) * K + i"}
    - {name: B (row), array: B, space: global, op: load, bytes: 4, index: "i * N + bx * 32 + tx"}
"""


def test_explain_a_users_own_spec(runner, tmp_path, nvcc):
    (tmp_path / "my_sgemm.cu").write_text(USER_CU)
    (tmp_path / "my_sgemm.yaml").write_text(USER_YAML)
    r = invoke(runner, ["explain", "--spec", str(tmp_path / "my_sgemm.yaml"), "--size", "1024", "--format", "json"])
    assert r.exit_code == 0, r.output
    e = Explanation.from_dict(json.loads(r.output)["explanation"])
    assert e.name == "my_sgemm" and e.shape == (1024, 1024, 1024)
    assert "latency" in e.needs_measurement and e.measured_s is None
    # coalesced loads, nothing staged: the L1 pipe holds it (2 wavefronts per warp FMA) and tiling lifts it
    assert "coalescing" in e.applied
    assert e.top.kind == "l1_wavefronts" and e.top.technique == "smem_tiling" and e.top.rung == "3"


@pytest.mark.parametrize("args,message", [
    (["explain", "--ladder", "fp32"], "--ladder: give the run(s)"),
    (["explain", "5", "--measure", "--profile-results", str(FIX / "profile_fp16_4096.json")], "--profile-results and --measure"),
    (["explain", "--ladder", "fp32", "--results", str(FIX / "profile_fp16_4096.json")], "not a file `gemmprof run"),
    (["explain", "3", "--ladder", "fp32", "--results", str(FIX / "run_ladder_4096.json")], "give no VARIANTS"),
    (["explain", "6", "-m", "4095", "--results", str(FIX / "run_ladder_4096.json")], "shape 4095x4096x4096 rejected"),
    (["explain", "--ladder", "fp32", "--size", "2048", "--results", str(FIX / "run_ladder_4096.json")],
     "--ladder takes the shape"),
])
def test_bad_input_is_one_line(runner, args, message):
    r = invoke(runner, args)
    assert r.exit_code != 0
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_report_has_an_explain_section(runner, tmp_path):
    from gemmprof.measure.explain_inputs import explain_run

    run, profile = gemmprof.load(FIX / "run_ladder_4096.json"), gemmprof.load(FIX / "profile_fp32_4096.json")
    out = tmp_path / "report.html"
    r = invoke(runner, ["report", str(FIX / "run_ladder_4096.json"), "--profile-results",
                        str(FIX / "profile_fp32_4096.json"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    html = out.read_text()
    section = html[html.index("<h2>What limits each rung</h2>"):]
    explanations = explain_run(run, profile, get_gpu("h100"))
    assert {e.kernel for e in explanations} >= {"1", "13", "h3"}
    for e in explanations:
        assert f">{e.kernel} {e.name}<" in section
        assert e.top.lift.split(":")[0].replace("'", "&#x27;") in section


def test_python_api_gives_the_typed_results():
    check = gemmprof.ladder_check("fp16", [FIX / f for f in RUNS["fp16"]], [FIX / f for f in PROFILES["fp16"]])
    assert isinstance(check, LadderCheck) and len(check.steps) == len(STEPS["fp16"]) - 1
    [e] = gemmprof.explain(["h2"], size=4096, results=[FIX / "run_ladder_4096.json"],
                           profiles=[FIX / "profile_fp16_4096.json"])
    assert isinstance(e, Explanation) and e.kernel == "h2"
    assert e == next(x for x in _ladder_explanations("fp16") if x.kernel == "h2")


def _ladder_explanations(ladder):
    runs = [gemmprof.load(FIX / f) for f in RUNS[ladder]]
    profiles = [gemmprof.load(FIX / f) for f in PROFILES[ladder]]
    return list(explain_ladder(ladder, runs, profiles, get_gpu("h100"))[1].values())


def test_measure_profiles_the_kernels_in_a_child_gemmprof_profile(runner, monkeypatch):
    """--measure runs `gemmprof profile ... --save FILE` (no shell) and explains from what it saved; the child
    is replaced here by one that writes a saved profile."""
    import shutil
    import subprocess

    seen = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"] = cmd
        shutil.copy(FIX / "profile_fp16_4096.json", cmd[cmd.index("--save") + 1])
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    r = invoke(runner, ["explain", "h2", "--size", "4096", "--measure", "--results", str(FIX / "run_ladder_4096.json"),
                        "--format", "json"])
    assert r.exit_code == 0, r.output
    cmd = seen["cmd"]
    assert cmd[1:4] == ["-m", "gemmprof", "profile"] and "wmma_multistage" in cmd
    assert cmd[cmd.index("-m", 3) + 1] == "4096"
    e = Explanation.from_dict(json.loads(r.output)["explanation"])
    assert any(lim.source == "ncu" for lim in e.limiters)
    launch = next(x for x in gemmprof.load(FIX / "profile_fp16_4096.json").launches if x.variant == "wmma_multistage")
    assert e.measured_s == pytest.approx(launch.duration_ns * 1e-9)


def test_measure_failure_is_one_line(runner, monkeypatch):
    import subprocess

    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "", "ncu: not found"))
    r = invoke(runner, ["explain", "h2", "--measure"])
    assert r.exit_code != 0 and "--measure: gemmprof profile failed (ncu: not found)" in r.output
    assert len(r.output.strip().splitlines()) == 1


def _facts(**over):
    from gemmprof.model.explain_bounds import KernelFacts

    base = dict(kernel="mine", name="mine", dtype="fp32", ladder=None, shape=(4096, 4096, 4096), flops=2 * 4096 ** 3,
                peak_flops=get_gpu("h100").peak_flops("fp32"), blocks=1024, tiles=1024, tile_bytes_c=64 * 1024,
                blocks_per_sm=2, warps_per_sm=16, registers=100, spill_bytes=0,
                sass={"loop_instructions": 150, "loop_FFMA": 100}, shared_wavefronts=None,
                shared_ideal_wavefronts=None, global_lines=None, global_ideal_lines=None, l2_bytes_model=None,
                dram_bytes_model=3 * 4096 * 4096 * 4, c_bytes=4096 * 4096 * 4, applied=())
    return KernelFacts(**{**base, **over})


def test_issue_bound_is_the_math_bound_scaled_by_instructions_per_ffma():
    """The H100's FFMA peak is 4 schedulers x 32 lanes x 2 FLOP per SM and clock, so a loop issuing one FFMA per
    slot meets it: the issue bound over the math bound is the loop's instructions per FFMA."""
    from gemmprof.model.explain import explain

    e = explain(_facts(), get_gpu("h100"))
    by = {lim.kind: lim for lim in e.limiters}
    assert by["issue"].bound_s / by["math_pipe"].bound_s == pytest.approx(150 / 100, rel=1e-3)
    assert e.top.kind == "issue" and e.top.gain == pytest.approx(1.5, rel=1e-3)
    assert e.top.technique == "register_tiling"  # 0.5 extra instructions per FFMA: loads, not addressing
    assert e.model_s == pytest.approx(by["issue"].bound_s / 0.85)


def test_techniques_already_applied_are_skipped_and_larger_tiles_only_with_register_room():
    from gemmprof.model.explain_techniques import pick_technique

    assert pick_technique(("coalescing", "smem_tiling"), ("coalescing",), None)[0] == "smem_tiling"
    assert pick_technique(("larger_tiles", "issue_efficiency"), applied_by("13"), "13", registers=127)[:2] == \
        ("larger_tiles", "14")
    assert pick_technique(("larger_tiles", "issue_efficiency"), applied_by("13"), "13", registers=240)[:2] == \
        ("issue_efficiency", "15")
    technique, rung, text = pick_technique(("issue_efficiency",), applied_by("15"), "15", registers=215)
    assert technique is None and rung is None and "already applied" in text


def test_waves_count_the_last_partial_round():
    from gemmprof.model.explain import explain

    gpu = get_gpu("h100")
    slots = gpu.sm_count * 2
    e = explain(_facts(blocks=slots + 1, tiles=slots + 1), gpu)  # one block in a second round: half the time idle
    waves = next(lim for lim in e.limiters if lim.kind == "waves")
    assert waves.gain == pytest.approx(2 * slots / (slots + 1), rel=1e-6)
    assert waves.technique == "persistent" and waves.rung == "h6" and waves.bound_tflops is None
    # a persistent fp16 kernel with a part-empty last round: fit the tile's width to the SMs, as h12 does
    hopper = explain(_facts(dtype="fp16", ladder="fp16", blocks=slots, tiles=slots + 1,
                            peak_flops=gpu.peak_flops("fp16_tensor_fp32_acc"), applied=applied_by("h7")), gpu)
    waves = next(lim for lim in hopper.limiters if lim.kind == "waves")
    assert waves.technique == "wave_fit" and waves.rung == "h12"
    full = explain(_facts(blocks=slots * 3, tiles=slots * 3), gpu)
    assert "waves" not in {lim.kind for lim in full.limiters}


def test_ladder_steps_without_both_ends_timed_are_left_out_and_said():
    check = gemmprof.ladder_check("fp16", [FIX / "run_hopper_fp16_4096.json"])
    assert [s.step for s in check.steps] == ["h3 -> h4", "h4 -> h5", "h5 -> h6"]
    assert any(n.startswith("h1 -> h2: left out") for n in check.notes)
    assert any(n.startswith("h2 -> h3: left out") for n in check.notes)


def test_a_profiled_hgmma_kernel_is_held_by_its_busy_tensor_pipe():
    """A wgmma kernel whose tensor pipe ncu found busy most of the time: the pipe's busy time is its bound, and
    nothing in the ladder lifts it (the ladder fixtures hold no HGMMA profile at 4096, so h3's launch is borrowed
    with its pipe's share raised; the findings are a fresh copy read from the file)."""
    from gemmprof.model.explain import explain

    launch = next(x for x in gemmprof.load(FIX / "profile_fp16_4096.json").launches
                  if x.variant == "mma_ldmatrix_swizzle")
    launch.tensor_pipe_pct = 95.0
    f = _facts(dtype="fp16", peak_flops=get_gpu("h100").peak_flops("fp16_tensor_fp32_acc"),
               sass={"HGMMA": 12, "loop_instructions": 3000, "loop_FFMA": 256}, profile=launch,
               measured_s=launch.duration_ns * 1e-9, applied=applied_by("h6"))
    e = explain(f, get_gpu("h100"))
    pipe = next(lim for lim in e.limiters if lim.kind == "tensor_pipe")
    assert pipe.bound_s == pytest.approx(launch.duration_ns * 1e-9 * 0.95)
    assert pipe.technique is None and "nothing in the ladder" in pipe.lift
    assert all(lim.technique not in e.applied for lim in e.limiters)


def test_without_nvcc_the_model_still_explains(monkeypatch):
    from gemmprof.measure import nvcc as nvccmod

    monkeypatch.setattr(nvccmod, "find_nvcc", lambda: None)
    [e] = gemmprof.explain(["3"], size=1024)
    assert e.top.kind == "l1_wavefronts" and e.top.technique == "register_tiling"
    assert any(n.startswith("not compiled (nvcc was not found") for n in e.notes), e.notes


def test_split_k_is_taught_by_rung_16_and_h8_on_their_own_ladders():
    from gemmprof.model.explain_techniques import applied_by, teaching_rung

    assert teaching_rung("split_k", "15") == "16" and teaching_rung("split_k", "13") == "16"
    assert teaching_rung("split_k", "h6") == "h8" and teaching_rung("split_k", "h7") == "h8"
    assert {"persistent", "split_k", "wgmma"} <= set(applied_by("h8"))  # h6's techniques and its own
    assert {"issue_efficiency", "split_k"} <= set(applied_by("16")) and "split_k" not in applied_by("15")


def test_explain_bounds_use_the_clock_the_run_held():
    """A run that held 1500 MHz under the power cap: the tensor peak explain bounds with is the datasheet's
    (989.5 TFLOP/s at 1830 MHz) scaled to 1500 MHz, and the evidence says so; without a run, the datasheet's."""
    from gemmprof.catalog.selection import choose
    from gemmprof.measure.explain_inputs import facts_for
    from gemmprof.model.explain import explain
    from gemmprof.model.traffic import GemmShape
    from gemmprof.results.clocks import ClockRecord
    from gemmprof.results.run import VariantResult

    gpu, shape = get_gpu("h200"), GemmShape(8192, 8192, 8192)
    kernel = choose(["h6"], dtype="fp16")[0]
    held = VariantResult(id="h6", name="h6", title="", dtype="fp16",
                         clocks=ClockRecord(1980, 1500, held_mhz=1500, held_min_mhz=1455, held_max_mhz=1605, samples=80))
    at_held = facts_for(kernel, shape, gpu, variant=held)
    cold = facts_for(kernel, shape, gpu)
    assert at_held.peak_flops == pytest.approx(989.5e12 * 1500 / 1830)
    assert cold.peak_flops == pytest.approx(989.5e12) and cold.clock_mhz is None
    math = next(lim for lim in explain(at_held, gpu).limiters if lim.kind in ("math_pipe", "tensor_pipe"))
    assert "1500 MHz the run held" in math.evidence and "811.1 TFLOP/s" in math.evidence


def test_measure_explains_on_the_gpu_it_measured(runner, monkeypatch):
    """--measure profiles on this machine: the bounds come from that GPU's spec (an H200 here: DRAM at 4.80 TB/s),
    not from the H100 default, even with a saved run from an H100 beside it. The profile stands in for the child
    `gemmprof profile` (its launches are the H100 record's, its device an H200's, as on the H200 machine)."""
    import dataclasses

    from gemmprof.measure import explain_inputs
    from gemmprof.results.profile import ProfileResults

    saved = ProfileResults.load(FIX / "profile_fp32_4096.json")
    measured = dataclasses.replace(saved, gpu="NVIDIA H200", gpu_spec="h200")
    monkeypatch.setattr(explain_inputs, "measure_profile", lambda *a, **k: measured)
    args = ["explain", "5", "--size", "4096", "--measure", "--results", str(FIX / "run_ladder_4096.json")]
    doc = json.loads(invoke(runner, [*args, "--format", "json"]).output)["explanation"]
    assert doc["gpu"] == "H200 SXM"
    dram = next(lim for lim in doc["limiters"] if lim["kind"] == "dram")
    assert "at 4.80 TB/s" in dram["evidence"], dram
    # the same files without --measure: the GPU they name (the saved run's H100)
    doc = json.loads(invoke(runner, [a for a in args if a != "--measure"] + ["--profile-results",
                                     str(FIX / "profile_fp32_4096.json"), "--format", "json"]).output)
    assert doc["explanation"]["gpu"] == "H100 SXM"
    # and --gpu still wins
    doc = json.loads(invoke(runner, [*args, "--gpu", "a100", "--format", "json"]).output)["explanation"]
    assert doc["gpu"].startswith("A100")
