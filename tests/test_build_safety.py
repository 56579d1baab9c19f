"""A kernel spec builds only what it says (docs/kernel-spec.md, "Threat model"): nothing in its `defines`, `flags`,
`compile_options` or folders makes nvcc's shell run a command, or nvcc write outside gemmprof's cache.

Each refused form has a canary: run straight through nvcc it creates the canary (so the test can fail), and
through `gemmprof build --spec` it is refused with one line naming the key, nothing is created anywhere (the
working folder, HOME, the spec's folder), and nvcc is never started. The classes of shell metacharacters and
host-effect options are generated (tests/fuzzing.py), and the generator is shown to draw every class."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from clitools import invoke
from fuzzing import (
    NVCC_GOOD,
    NVCC_HOST_EFFECTS,
    SHELL_CLASSES,
    bad_flags,
    injected_word,
)
from hypothesis import HealthCheck, Phase, assume, find, given, settings
from hypothesis import strategies as st

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.build_fields import parse_build_fields
from gemmprof.catalog.nvcc_flags import MACRO_VALUE, MACRO_VALUE_SEQUENCES, check_flags, check_macro
from gemmprof.errors import SpecError

KERNEL = "__global__ void k(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)" \
         " { if (threadIdx.x == 0) C[0] = alpha * A[0] * B[0] + beta; }\n"
SEARCH = settings(max_examples=3000, database=None, suppress_health_check=list(HealthCheck), phases=(Phase.generate,))


def _tree(*roots: Path) -> set[str]:
    return {str(p) for r in roots for p in r.rglob("*")}


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A spec folder, a working folder and a HOME, all empty but the kernel; the cache elsewhere."""
    spec_dir, work, home, cache = (tmp_path / n for n in ("spec", "work", "home", "cache"))
    for d in (spec_dir, work, home, cache):
        d.mkdir()
    (spec_dir / "k.cu").write_text(KERNEL)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMMPROF_CACHE", str(cache))
    return spec_dir, work, home, cache


def _spec(spec_dir: Path, name: str = "k.yaml", **fields) -> Path:
    doc = {"name": "canary", "file": "k.cu", "entry": "k", "grid": [1], "block": [32], **fields}
    path = spec_dir / name
    path.write_text(yaml.safe_dump(doc))
    return path


def _nvcc_direct(nvcc: str, cwd: Path, args: list[str], out: Path) -> subprocess.CompletedProcess:
    """nvcc as a spec's build would run it, by hand: the positive control that the canary works."""
    return subprocess.run([nvcc, "-cubin", "-arch=sm_90", *args, "-o", str(out), str(cwd.parent / "spec" / "k.cu")],
                          cwd=cwd, capture_output=True, text=True, check=False)


# (key, value in the spec, nvcc's arguments when run by hand, the canary relative to the working folder); "{d}" is
# a folder outside the working one (for options that take a folder or a file)
CANARIES = [
    ("flags", ["-keep"], ["-keep"], "k.ptx"),
    ("flags", ["-save-temps"], ["-save-temps"], "k.ptx"),
    ("flags", ["-keep-dir", "{d}", "-keep"], ["-keep-dir", "{d}", "-keep"], "{d}/k.ptx"),
    ("flags", ["-MD", "-MF", "dep.d"], ["-MD", "-MF", "dep.d"], "dep.d"),
    ("flags", ["-MF", "dep.d", "-MD"], ["-MF", "dep.d", "-MD"], "dep.d"),
    ("flags", ["--dependency-output", "dep.d", "-MD"], ["--dependency-output", "dep.d", "-MD"], "dep.d"),
    ("flags", ["-time", "t.csv"], ["-time", "t.csv"], "t.csv"),
    ("flags", ["--fdevice-time-trace=trace"], ["--fdevice-time-trace=trace"], "trace.json"),
    ("flags", ["-Xcompiler", "-ocanary"], ["-Xcompiler", "-ocanary"], "canary"),
    ("flags", ["-Xcompiler=-ocanary"], ["-Xcompiler=-ocanary"], "canary"),
    ("flags", ["-Xcompiler", "-O2,$(touch canary)"], ["-Xcompiler", "-O2,$(touch canary)"], "canary"),
    ("flags", ["-Xptxas", "-v,`touch canary`"], ["-Xptxas", "-v,`touch canary`"], "canary"),
    ("flags", ["-Xcudafe", "`touch canary`"], ["-Xcudafe", "`touch canary`"], "canary"),
    ("flags", ["--options-file", "{d}/opts"], ["--options-file", "{d}/opts"], "opt.csv"),
    ("flags", ["-ccbin", "{d}/bin"], ["-ccbin", "{d}/bin"], "ccbin_ran"),
    ("compile_options", ["-keep"], ["-keep"], "k.ptx"),
    ("defines", ["X=1+0*$(touch canary)"], ["-DX=1+0*$(touch canary)"], "canary"),
    ("defines", ["X=`touch canary`"], ["-DX=`touch canary`"], "canary"),
    ("defines", ["X=a\\$(touch canary)"], ["-DX=a\\$(touch canary)"], "canary"),
    ("defines", {"X": "`touch canary`"}, ["-DX=`touch canary`"], "canary"),
    ("include_dirs", ["i`touch canary`"], ["-I{s}/i`touch canary`"], "canary"),
    ("include_dirs", ["i\\$(touch canary)"], ["-I{s}/i\\$(touch canary)"], "canary"),
]


def _fill(value, d: Path, s: Path):
    if isinstance(value, dict):
        return value
    return [v.replace("{d}", str(d)).replace("{s}", str(s)) for v in value]


@pytest.mark.parametrize(("key", "value", "direct", "canary"), CANARIES,
                         ids=[f"{k}:{' '.join(v) if isinstance(v, list) else v}" for k, v, *_ in CANARIES])
def test_a_refused_form_runs_and_writes_nothing(nvcc, sandbox, tmp_path, key, value, direct, canary):
    spec_dir, work, home, cache = sandbox
    d = tmp_path / "elsewhere"
    (d / "bin").mkdir(parents=True)
    (d / "opts").write_text("-time opt.csv\n")
    (d / "bin" / "gcc").write_text('#!/bin/sh\ntouch ccbin_ran\nexec gcc "$@"\n')
    (d / "bin" / "gcc").chmod(0o755)
    if key == "include_dirs":
        (spec_dir / value[0]).mkdir()
    target = Path(canary.replace("{d}", str(d)))
    target = target if target.is_absolute() else work / target

    # the control: nvcc run by hand with these arguments creates the canary
    control = tmp_path / "control"
    control.mkdir()
    ran = _nvcc_direct(nvcc, control, _fill(direct, d, spec_dir), tmp_path / "control.cubin")
    made = Path(str(target).replace(str(work), str(control)))
    assert made.exists(), f"the control did not create {made}: {ran.stderr[-400:]}"
    made.unlink()
    for stray in d.glob("k.*"):
        stray.unlink()

    spec = _spec(spec_dir, **{key: _fill(value, d, spec_dir)})
    before = _tree(spec_dir, work, home, d)
    from click.testing import CliRunner

    r = invoke(CliRunner(), ["build", "--spec", str(spec), "--arch", "sm_90"])
    lines = r.output.strip().splitlines()
    assert r.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert f"{spec}: {key}" in lines[0], lines[0]  # names the file and the key (with its index)
    assert not target.exists(), f"{target} was created"
    assert _tree(spec_dir, work, home, d) == before  # nothing written anywhere
    assert not any(cache.rglob("*.cubin"))  # nvcc never ran


def test_a_spec_whose_folder_nvcc_would_hand_its_shell_is_refused(nvcc, sandbox, tmp_path):
    """The spec's own folder is an -I of the build: a folder named to run something is refused like include_dirs."""
    spec_dir, work, home, _ = sandbox
    bad = spec_dir / "k`touch canary`"
    bad.mkdir()
    (bad / "k.cu").write_text(KERNEL)
    ran = subprocess.run([nvcc, "-cubin", "-arch=sm_90", f"-I{bad}", "-o", str(tmp_path / "x.cubin"),
                          str(bad / "k.cu")], cwd=work, capture_output=True, check=False)
    assert (work / "canary").exists(), ran.stderr[-400:]
    (work / "canary").unlink()
    spec = _spec(bad)
    from click.testing import CliRunner

    r = invoke(CliRunner(), ["build", "--spec", str(spec)])
    assert r.exit_code != 0 and f"{spec}: file:" in r.output and "nvcc's shell" in r.output, r.output
    assert not (work / "canary").exists() and not list(home.iterdir())


def test_the_allowed_build_still_builds_and_writes_only_the_cache(nvcc, sandbox):
    """The harness itself: a spec with allowed flags and defines builds, and only the cache gains files."""
    spec_dir, work, home, cache = sandbox
    (spec_dir / "inc dir (1)").mkdir()
    spec = _spec(spec_dir, flags=[x for opt in NVCC_GOOD for x in opt], defines=["X=1+2*(3<4)", "Y="],
                 include_dirs=["inc dir (1)"])
    before = _tree(spec_dir, work, home)
    from click.testing import CliRunner

    r = invoke(CliRunner(), ["build", "--spec", str(spec), "--arch", "sm_90"])
    assert r.exit_code == 0, r.output
    assert _tree(spec_dir, work, home) == before
    assert list(cache.rglob("*.cubin"))


# ---- generated classes ----

def _draws_all(strategy, label, wanted: set) -> None:
    seen: set = set()

    def every_one_seen(example) -> bool:
        seen.update(label(example))
        return wanted <= seen

    find(strategy, every_one_seen, settings=SEARCH)  # raises Unsatisfiable when some are never drawn


def test_the_generators_draw_every_class():
    _draws_all(injected_word(), lambda w: {w[0]}, set(SHELL_CLASSES))
    _draws_all(bad_flags(), lambda f: {f[0]}, {*SHELL_CLASSES, "host effect"})
    _draws_all(bad_flags(), lambda f: {o for o in NVCC_HOST_EFFECTS if f[0] == "host effect" and o in f[1]},
               set(NVCC_HOST_EFFECTS))
    # an injection lands in the value of an allowed option, not only in an option of its own; among good options
    _draws_all(bad_flags(), lambda f: {"in a value"} if f[0] != "host effect" and f[2] > 0 and f[1][f[2] - 1] in (
        "-Xptxas", "-Xcompiler", "-Xcudafe", "--ftz") else set(), {"in a value"})
    _draws_all(bad_flags(), lambda f: {"among good ones"} if f[2] > 0 and len(f[1]) > f[2] + 1 else set(),
               {"among good ones"})


@given(bad_flags())
def test_every_flags_list_with_a_bad_option_is_refused_naming_its_item(case):
    kind, flags, index = case
    for key in ("flags", "compile_options"):
        with pytest.raises(SpecError) as err:
            check_flags("s.yaml", key, flags)
        msg = str(err.value)
        assert msg.startswith(f"s.yaml: {key}[{index}]: ") and "\n" not in msg, (kind, flags, msg)


@given(injected_word(), st.sampled_from(["list", "mapping", "name"]))
def test_every_define_holding_a_shell_metacharacter_is_refused(case, form):
    _, word = case
    if form == "list":
        doc, key = {"defines": [f"X={word}"]}, "defines[0]"
    elif form == "mapping":
        doc, key = {"defines": {"X": word}}, "defines.X"
    else:
        doc, key = {"defines": [f"{word}=1"]}, "defines[0]"
    with pytest.raises(SpecError) as err:
        parse_build_fields(Path("s.yaml"), doc, {})
    msg = str(err.value)
    assert msg.startswith(f"s.yaml: {key}") and "\n" not in msg, msg
    assert "letters, digits" in msg  # says what is allowed


@settings(max_examples=25)
@given(st.text(alphabet="ABCXYZabcxyz0123456789_.+-*/()<>=!&|~^%?:", max_size=40))
def test_an_allowed_define_reaches_the_preprocessor_unchanged_and_runs_nothing(nvcc, tmp_path_factory, value):
    """Through nvcc's shell for real: the macro the preprocessor sees is the spec's value, byte for byte."""
    assume(not any(seq in value for seq in MACRO_VALUE_SEQUENCES))  # refused: the next test
    assert MACRO_VALUE.fullmatch(value)
    name, value = check_macro("s.yaml", "defines[0]", "GEMMPROF_PROBE", value)
    work = tmp_path_factory.mktemp("define")
    (work / "k.cu").write_text(KERNEL)
    out = subprocess.run([nvcc, "-E", "-Xcompiler", "-dM", f"-D{name}={value}", "k.cu"], cwd=work,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-400:]
    assert f"#define GEMMPROF_PROBE {value}".rstrip() in [line.rstrip() for line in out.stdout.splitlines()]
    assert sorted(os.listdir(work)) == ["k.cu"]


@settings(max_examples=40)
@given(st.lists(st.sampled_from(NVCC_GOOD), max_size=5))
def test_allowed_flags_are_accepted_by_gemmprof_and_by_nvcc(nvcc, tmp_path_factory, options):
    flags = [x for opt in options for x in opt]
    assert check_flags("s.yaml", "flags", flags) == tuple(flags)
    work = tmp_path_factory.mktemp("flags")
    out = subprocess.run([nvcc, "-dryrun", "-cubin", "-arch=sm_90", "-O3", "-std=c++17", *flags, "-o", "k.cubin",
                          "k.cu"], cwd=work, capture_output=True, text=True, check=False)
    assert "nvcc fatal" not in out.stderr, out.stderr[-400:]


@given(st.text(alphabet="ab1*/?", max_size=12))
def test_a_define_the_preprocessor_would_not_keep_as_written_is_refused(value):
    """Comments and trigraphs: the shell runs nothing in them, but the macro would not be the value written."""
    if any(seq in value for seq in MACRO_VALUE_SEQUENCES):
        with pytest.raises(SpecError, match=r"defines\[0\]: .* would start a comment or a trigraph"):
            check_macro("s.yaml", "defines[0]", "X", value)
    else:
        assert check_macro("s.yaml", "defines[0]", "X", value) == ("X", value)


def test_every_allowed_option_is_one_nvcc_and_ptxas_accept(nvcc, tmp_path):
    """The allow-list is real: each plain option and an example value of each valued one pass nvcc's own option
    check (-dryrun), and each ptxas option passes ptxas on a real kernel."""
    from gemmprof.catalog import nvcc_flags as nf

    examples = {"-maxrregcount": "64", "--maxrregcount": "64", "-ftz": "true", "--ftz": "false", "-prec-div": "true",
                "--prec-div": "false", "-prec-sqrt": "true", "--prec-sqrt": "false", "-fmad": "true",
                "--fmad": "false", "-std": "c++20", "--std": "c++14", "-Xptxas": "-v", "--ptxas-options": "-O2",
                "-Xcompiler": "-Wall", "--compiler-options": "-O2", "-Xcudafe": "--diag_suppress=177",
                "-diag-suppress": "177", "--diag-suppress": "177,550", "-diag-warn": "177", "--diag-warn": "177",
                "-diag-error": "177", "--diag-error": "177", "-Werror": "all-warnings",
                "--Werror": "cross-execution-space-call", "-default-stream": "per-thread",
                "--default-stream": "legacy", "-t": "2", "--threads": "2", "-split-compile": "2",
                "--split-compile": "2"}
    assert set(examples) == set(nf.VALUED)
    (tmp_path / "k.cu").write_text(KERNEL)
    for flag in [*sorted(nf.PLAIN), *(f"{k}={v}" for k, v in examples.items())]:
        check_flags("s.yaml", "flags", [flag])
        out = subprocess.run([nvcc, "-dryrun", "-cubin", "-arch=sm_90", flag, "-o", "k.cubin", "k.cu"], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
        assert "nvcc fatal" not in out.stderr and out.returncode == 0, (flag, out.stderr[-300:])
    ptx = tmp_path / "k.ptx"
    subprocess.run([nvcc, "-ptx", "-arch=sm_90", "-o", str(ptx), "k.cu"], cwd=tmp_path, check=True)
    ptxas = str(Path(nvcc).resolve().parent / "ptxas")
    pieces = ["-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "-warn-spills", "--warn-on-spills", "-warn-lmem-usage",
              "--warn-on-local-memory-usage", "-warn-double-usage", "--warn-on-double-precision-use", "-Werror",
              "--warning-as-error", "-w", "--disable-warnings", "-lineinfo", "--generate-line-info",
              "-disable-optimizer-consts", "--disable-optimizer-constants", "-suppress-stack-size-warning",
              "--suppress-stack-size-warning", "--opt-level=2", "-dlcm=cg", "--def-load-cache=ca", "-dscm=wt",
              "--def-store-cache=wb", "-maxrregcount=64", "--maxrregcount=64", "-allow-expensive-optimizations=true",
              "--allow-expensive-optimizations=false", "-fmad=true", "--fmad=false"]
    for piece in pieces:
        assert nf.PTXAS.ok(piece), piece
        out = subprocess.run([ptxas, "-arch=sm_90", piece, "-o", str(tmp_path / "k.cubin"), str(ptx)],
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, (piece, out.stderr[-300:])


def test_spec_names_that_reach_the_build_are_c_names(tmp_path):
    """A parameter passed as -D, dtype_define, a specialize macro, entry: C identifiers, refused otherwise."""
    (tmp_path / "k.cu").write_text(KERNEL)
    base = "file: k.cu\nentry: k\ngrid: [1]\nblock: [32]\n"
    cases = [
        ("params: {'X=$(touch r)': 1}\ndefines: ['X=$(touch r)']\n", "params.X=$(touch r)"),
        ("dtype_define: 'é'\n", "dtype_define"),
        ("specialize: {'A B': 1}\n", "specialize"),
        ("entry: 'k; } int x = 1; {'\n", "entry"),
        ("targets: ['sm_90$(x)']\n", "targets"),
        ("defines: {X: null}\n", "defines.X"),
        ("name: \"k\\n\"\n", "name"),  # a newline, which a pattern's $ lets through
        (f"name: {'k' * 101}\n", "name"),  # the build's file name: too long for the file system at 256
    ]
    for extra, key in cases:
        text = base.replace("entry: k\n", "") if extra.startswith("entry") else base
        path = tmp_path / "s.yaml"
        path.write_text(text + extra)
        with pytest.raises(SpecError, match=rf"s\.yaml: {re.escape(key)}"):
            specmod.load_spec(path)
    path = tmp_path / "l.yaml"
    path.write_text('launcher: k.cu\nentry: k\nlibs: ["m\\n"]\n')  # linked as -lNAME, which nvcc passes bare
    with pytest.raises(SpecError, match=r"l\.yaml: libs"):
        specmod.load_spec(path)
