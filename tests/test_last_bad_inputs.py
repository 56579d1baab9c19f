"""The last bad inputs: each gives one clear line and a non-zero exit, and each class is generated (every float
option of every command, every reader of a file, every results layout, every integer a spec may hold...)."""

from __future__ import annotations

import csv
import importlib
import io
import math
import re

import click
import pytest
from conftest import FIXTURES
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from gemmprof.cli import COMMANDS

NOT_FINITE = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+Infinity", "1e400", "-1e400"]


def _float_options() -> list[tuple[str, click.Option]]:
    """Every option of every command whose value is a float (FloatRange, FLOAT, FiniteFloat...)."""
    out = []
    for name, (module, _) in COMMANDS.items():
        command = importlib.import_module(module).command
        for param in command.params:
            kind = param.type
            if isinstance(kind, click.types.FloatParamType) or getattr(kind, "name", "") in ("float", "number"):
                out.append((name, param))
    return out


FLOAT_OPTIONS = _float_options()


def test_the_float_options_are_found():
    names = {(c, p.opts[-1]) for c, p in FLOAT_OPTIONS}
    assert {("tune", "--budget-minutes"), ("tune", "--budget"), ("run", "--budget"), ("run", "--precision"),
            ("diff", "--fail-on-regression"), ("model", "--alpha")} <= names, names


@given(st.sampled_from(FLOAT_OPTIONS), st.sampled_from(NOT_FINITE))
def test_every_float_option_refuses_what_is_not_finite(option, text):
    command, param = option
    ctx = click.Context(click.Command(command))
    with pytest.raises(click.BadParameter):
        value = param.type_cast_value(ctx, text)
        if param.callback is not None:  # a check made after the type (diff's --fail-on-regression)
            param.callback(ctx, param, value)
        assert math.isfinite(value)  # reached only when nothing refused it: fails the test


# ---- every integer option: ASCII digits only (Python's int() also takes ' 3', '1_000', '+7' and other digits) ----

NOT_DIGITS = [" 3", "3 ", "1_000", "+7", "-0", "0x10", "\u0663", "\uff13", "", "3.0", "1e3"]


def _integer_options() -> list[tuple[str, click.Option]]:
    out = []
    for name, (module, _) in COMMANDS.items():
        for param in importlib.import_module(module).command.params:
            if isinstance(param.type, click.types.IntParamType) and not param.is_flag:
                out.append((name, param))
    return out


INTEGER_OPTIONS = _integer_options()


def test_the_integer_options_are_found_and_each_takes_digits_only():
    from gemmprof.commands._options import WholeNumber

    names = {(c, p.opts[-1]) for c, p in INTEGER_OPTIONS}
    assert {("run", "--max-reps"), ("run", "--seed"), ("run", "--size"), ("tune", "--top"), ("build", "--jobs"),
            ("occupancy", "--registers"), ("sweep", "--max-reps"), ("ceiling", "--copy-mib")} <= names, names
    assert [(c, p.opts[-1]) for c, p in INTEGER_OPTIONS if not isinstance(p.type, WholeNumber)] == []
    assert any(t.strip() != t for t in NOT_DIGITS) and any(not t.isascii() for t in NOT_DIGITS)


@given(st.sampled_from(INTEGER_OPTIONS), st.sampled_from(NOT_DIGITS))
def test_every_integer_option_refuses_what_is_not_plain_digits(option, text):
    command, param = option
    with pytest.raises(click.BadParameter, match="digits 0-9|range"):
        param.type_cast_value(click.Context(click.Command(command)), text)


def test_an_integer_written_plainly_is_taken():
    command, param = next((c, p) for c, p in INTEGER_OPTIONS if (c, p.opts[-1]) == ("run", "--max-reps"))
    assert param.type_cast_value(click.Context(click.Command(command)), "1000") == 1000


def test_models_tiles_are_four_plain_whole_numbers(runner):
    from clitools import invoke

    for bad in ("128, 128,8,8", "128,128,8", "128,128,0,8", "1_28,128,8,8"):
        result = invoke(runner, ["model", "--size", "64", "--tiles", bad])
        assert result.exit_code != 0 and "--tiles" in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert invoke(runner, ["model", "--size", "64", "--tiles", "64,64,8,8"]).exit_code == 0


# ---- every file a command reads: a FIFO, a folder, a device or nothing is one line, never a hang ----

OUTPUTS = {"-o", "--output", "--plot", "--save", "--save-csv", "--save-report", "--table", "--cache-dir",
           "--child-results", "--out-dir"}
RESULTS = str(FIXTURES / "results" / "h100_fix_4096.json")
NCU_CSV = str(FIXTURES / "ncu" / "h100_naive_smem_details.csv")
NSYS_STATS = str(FIXTURES / "nsys" / "a100_seed003_gpukernsum_4096.txt")
# what else a command needs to reach the file: by command, or by (command, option)
NEEDS = {"report": ["-o", "{tmp}/out.html"], "explain": ["--size", "64"], "tune": ["--stand-in"],
         "occupancy": ["-t", "256", "-r", "32"], ("run", "--gpu-file"): ["1"], ("run", "--profile"): ["1"],
         ("build", "--gpu-file"): ["1", "--size", "64"], ("build", "--profile"): ["1", "--size", "64"],
         ("profile", "--gpu-file"): ["--from", NCU_CSV], ("profile", "--profile"): ["--from", NCU_CSV],
         ("compare-nsys", "--gpu-file"): [NSYS_STATS], ("compare-nsys", "--profile"): [NSYS_STATS],
         ("roofline", "--gpu-file"): ["--model-only"], ("roofline", "--profile"): ["--model-only"],
         ("report", "--profile-results"): [RESULTS, "-o", "{tmp}/out.html"],
         "sweep": ["--dtype", "fp32", "--out-dir", "{tmp}/sweep", "--stand-in"]}
# readers whose file is not a click.Path: positional words that name a report or a results file
WORD_READERS = [("compare-nsys", None, ".sqlite"), ("compare-nsys", None, ".txt"), ("roofline", None, ".json")]


def _readers() -> list[tuple[str, str | None, str]]:
    """(command, option or None for the positional argument, the file's suffix): every file input of the CLI."""
    out = []
    for name, (module, _) in COMMANDS.items():
        for param in importlib.import_module(module).command.params:
            if not isinstance(param.type, click.Path) or set(param.opts) & OUTPUTS:
                continue
            suffix = ".yaml" if param.opts[-1] in ("--spec", "--gpu-file", "--profile") else (
                ".csv" if param.opts[-1] == "--from" else ".json")
            out.append((name, param.opts[-1] if isinstance(param, click.Option) else None, suffix))
    return [*out, *WORD_READERS]


READERS = _readers()
KINDS = ["FIFO", "folder", "character device", "missing", "broken link"]


def test_the_readers_are_found():
    found = {(c, o) for c, o, _ in READERS}
    assert {("show", None), ("diff", None), ("report", None), ("profile", "--from"), ("explain", "--results"),
            ("build", "--spec"), ("model", "--gpu-file"), ("compare-nsys", None)} <= found, found


def _bad_file(tmp, kind: str, suffix: str):
    import os

    path = tmp / f"input{suffix}"
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "character device":
        path.symlink_to(os.devnull)  # the suffix a reader goes by, on a device
    elif kind == "broken link":
        path.symlink_to(tmp / "gone")
    return str(path)


def _invoke_within(argv: list[str], seconds: int, doing: str):
    """The CLI on argv, stopped by SIGALRM with a TimeoutError where it is still `doing` after `seconds`."""
    import signal

    from click.testing import CliRunner
    from clitools import invoke

    def hang(*_):
        raise TimeoutError(f"{argv} still {doing} after {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        return invoke(CliRunner(), argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("command", "option", "suffix"), READERS, ids=[f"{c}:{o or 'arg'}" for c, o, _ in READERS])
def test_every_reader_refuses_what_is_not_a_file_in_one_line(tmp_path, monkeypatch, command, option, suffix, kind):
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    bad = _bad_file(tmp_path, kind, suffix)
    extra = [x.replace("{tmp}", str(tmp_path)) for x in NEEDS.get((command, option), NEEDS.get(command, []))]
    argv = [command, *extra, *((option, bad) if option else (bad,))]
    if command == "diff":
        argv.append(bad)
    r = _invoke_within(argv, 20, "reading")
    lines = [ln for ln in r.output.strip().splitlines() if "old spelling" not in ln]  # an old option's spelling
    assert r.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error: "), (argv, r.output)
    words = {"FIFO": "FIFO", "folder": "director", "character device": "device", "missing": "exist",
             "broken link": "exist"}[kind]
    assert words in lines[0] or (kind == "folder" and "folder" in lines[0]) or (
        kind == "broken link" and "link" in lines[0]), (argv, lines[0])


# ---- an ncu CSV whose every row is damaged: the cells are named, and with nothing left the exit is non-zero ----

NCU_CSVS = sorted((FIXTURES / "ncu").glob("*.csv"))
DAMAGED_NUMBERS = ["nan", "-nan", "inf", "-inf", "1e400", "-1e400", "9" * 5000]
DATA_ROW = re.compile(r'^"[0-9]+",')


@st.composite
def every_row_damaged(draw):
    """(layout, mode, text, rows): a real ncu CSV with every launch row damaged, in its ID or (details) its value;
    `rows` is (launch rows, rows damaged)."""
    path = draw(st.sampled_from(NCU_CSVS))
    lines = path.read_text(encoding="utf-8").splitlines()
    header = next(next(csv.reader([x])) for x in lines if x.startswith('"ID"'))
    layout = "details" if "Metric Value" in header else "raw"
    mode = draw(st.sampled_from(["id", "value"] if layout == "details" else ["id"]))
    out, rows, damaged = [], 0, 0
    for line in lines:
        if DATA_ROW.match(line):
            rows += 1
            row = next(csv.reader([line]))
            column = 0 if mode == "id" else header.index("Metric Value")
            row[column] = draw(st.sampled_from(DAMAGED_NUMBERS + (["x1", "", "²"] if mode == "id" else [])))
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="").writerow(row)
            damaged += buf.getvalue() != line
            line = buf.getvalue()
        out.append(line)
    return layout, mode, "\n".join(out) + "\n", (rows, damaged)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # the CSVs are 100 kB
def test_the_damage_reaches_every_layout_and_cell():
    seen: set = set()

    def all_seen(case):
        seen.add(case[:2])
        return seen >= {("details", "id"), ("details", "value"), ("raw", "id")}

    find(every_row_damaged(), all_seen, settings=settings(max_examples=500, database=None, phases=(Phase.generate,)))


@settings(max_examples=100)
@given(every_row_damaged())
def test_every_launch_row_is_damaged(case):
    rows, damaged = case[3]
    assert rows > 0 and damaged == rows


@settings(max_examples=60)
@given(every_row_damaged())
def test_an_ncu_csv_with_every_row_damaged_exits_non_zero(tmp_path_factory, case):
    from click.testing import CliRunner
    from clitools import invoke

    layout, mode, text, _ = case
    path = tmp_path_factory.mktemp("ncu") / "damaged.csv"
    path.write_text(text)
    r = invoke(CliRunner(), ["profile", "--from", str(path)])
    lines = r.output.strip().splitlines()
    assert r.exit_code != 0 and len(lines) == 1 and "nothing to show" in lines[0], (layout, mode, r.output[-500:])


# ---- a file of a newer layout is refused, never read as the old one ----

LAYOUT_VALUES = st.one_of(st.integers(2, 10 ** 30), st.integers(-10 ** 6, 0), st.floats(allow_nan=True),
                          st.text(max_size=5), st.booleans(), st.none(), st.lists(st.integers(), max_size=2))


def _layout_files(tmp, value):
    """(what, path, load) of every gemmprof file that carries a layout number, with it set to `value`."""
    import json

    from gemmprof.catalog.tuned_defaults import load_tuned_defaults
    from gemmprof.results.loading import load
    from gemmprof.results.sweep import load_sweep
    from gemmprof.tune.cache import CACHE_KIND, CacheKey, TuneCache

    run = json.loads((FIXTURES / "results" / "h100_fix_4096.json").read_text())
    (tmp / "run.json").write_text(json.dumps({**run, "schema": value}))
    sweep = {"kind": "gemmprof.sweep", "schema": value, "dtype": "fp32", "device": "x", "shapes": ["64x64x64"],
             "files": [], "cells": [], "confirmed": []}
    (tmp / "sweep.json").write_text(json.dumps(sweep))
    (tmp / "tuned_defaults.json").write_text(json.dumps({"kind": "gemmprof.tuned-defaults", "version": value,
                                                         "devices": {}}))
    key = CacheKey("GPU", "nvcc", "k", "abc", "fp32", "64x64x64")
    (tmp / key.filename()).write_text(json.dumps({"kind": CACHE_KIND, "version": value, "key": key.to_dict()}) + "\n")
    return [("run results", tmp / "run.json", load), ("sweep", tmp / "sweep.json", load_sweep),
            ("tuned defaults", tmp / "tuned_defaults.json", lambda p: load_tuned_defaults(p.parent, "GPU", "k")),
            ("tune cache", tmp / key.filename(), lambda p: TuneCache(p, key))]


@settings(max_examples=100)
@given(LAYOUT_VALUES)
def test_a_newer_or_unknown_layout_is_refused_naming_file_and_number(tmp_path_factory, value):
    from gemmprof.errors import InputError

    if value is None:
        value = 99  # None is JSON null: a key that is present without a number; the key's absence is layout 1
    tmp = tmp_path_factory.mktemp("layout")
    for what, path, load in _layout_files(tmp, value):
        with pytest.raises(InputError) as err:
            load(path)
        msg = str(err.value)
        assert str(path) in msg and ("schema" in msg or "version" in msg) and "\n" not in msg, (what, msg)


def test_layout_one_still_loads(tmp_path):
    for _what, path, load in _layout_files(tmp_path, 1):
        load(path)  # no error: the layout this gemmprof writes


def test_show_refuses_schema_99(tmp_path):
    from click.testing import CliRunner
    from clitools import invoke

    _layout_files(tmp_path, 99)
    r = invoke(CliRunner(), ["show", str(tmp_path / "run.json")])
    assert r.exit_code != 0 and "schema 99 is newer than this gemmprof reads" in r.output, r.output


# ---- what a results file may cost once read: bytes unpacked, JSON values ----

COSTLY_KINDS = ["zeros", "empty lists", "empty objects", "strings", "pairs", "nested", "bytes"]


@st.composite
def costly_json(draw):
    """(kind, gzipped, extra): JSON text just past a limit (`costly_text` makes it): more values than MAX_VALUES
    (of a drawn kind), or more bytes than MAX_FILE_BYTES (one long string), gzipped or plain."""
    kind = draw(st.sampled_from(COSTLY_KINDS))
    gz = draw(st.booleans()) or kind == "bytes"  # a plain file past the byte limit would be 256 MiB on disk
    return kind, gz, draw(st.integers(1, 1000))


def costly_text(kind: str, gz: bool, extra: int) -> bytes:
    import gzip

    from gemmprof.results import files

    n = files.MAX_VALUES + extra
    text = {"zeros": lambda: b"[" + b"0," * n + b"0]", "empty lists": lambda: b"[" + b"[]," * n + b"[]]",
            "empty objects": lambda: b"[" + b"{}," * n + b"{}]", "strings": lambda: b"[" + b'"",' * n + b'""]',
            "pairs": lambda: b'{"kind": "gemmprof.run", ' + b'"a":1,' * n + b'"b":1}',
            "nested": lambda: b"[" + b"[[0]]," * (n // 2) + b"0]",
            "bytes": lambda: b'"' + b"x" * (files.MAX_FILE_BYTES + extra) + b'"'}[kind]()
    return gzip.compress(text, 6) if gz else text


@settings(max_examples=12, deadline=None)
@given(costly_json())
def test_a_costly_results_file_is_refused_quickly(tmp_path_factory, case):
    import time

    from click.testing import CliRunner
    from clitools import invoke

    kind, gz, extra = case
    data = costly_text(kind, gz, extra)
    path = tmp_path_factory.mktemp("costly") / ("big.json.gz" if gz else "big.json")
    path.write_bytes(data)
    t0 = time.perf_counter()
    r = invoke(CliRunner(), ["show", str(path)])
    seconds = time.perf_counter() - t0
    lines = r.output.strip().splitlines()
    assert r.exit_code != 0 and len(lines) == 1 and str(path) in lines[0], (kind, r.output[-300:])
    assert "JSON values" in lines[0] or "MiB" in lines[0], lines[0]  # names the limit
    assert seconds < 20, (kind, seconds)


def test_the_costly_files_are_of_every_kind():
    seen: set = set()

    def all_seen(case):
        seen.add(case[:2])
        return {k for k, _ in seen} >= set(COSTLY_KINDS) and {g for _, g in seen} == {True, False}

    find(costly_json(), all_seen, settings=settings(max_examples=200, database=None, phases=(Phase.generate,)))


# ---- a spec's entry that names no kernel of its .cu: an error naming entry and the file, never `ok` ----

TWO_KERNELS = """__global__ void sgemm_a(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                        float* C) { C[0] = alpha; }
extern "C" __global__ void sgemm_b(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                                   float* C) { C[0] = beta; }
"""
ENTRIES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,16}(::[A-Za-z_][A-Za-z0-9_]{0,8})?", fullmatch=True).filter(
    lambda e: e.split("::")[-1] not in ("sgemm_a", "sgemm_b"))


@pytest.fixture(scope="module")
def two_kernels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("entry")
    (folder / "two.cu").write_text(TWO_KERNELS)
    return folder


@settings(max_examples=40)
@given(ENTRIES)
def test_an_entry_missing_from_the_source_is_an_error_naming_entry_and_file(nvcc, two_kernels, monkeypatch, entry):
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.measure.build import nvcc_build

    monkeypatch.setenv("GEMMPROF_CACHE", str(two_kernels / "cache"))  # one compile: the wrapper is the same
    path = two_kernels / "s.yaml"
    path.write_text(f"name: two\nfile: two.cu\nentry: '{entry}'\ngrid: [1]\nblock: [32]\n")
    result = nvcc_build(bind(specmod.load_spec(path)), "sm_90", nvcc)
    assert not result.ok and result.build is None
    assert result.error.startswith(f"{path}: entry: no kernel {entry!r} in {two_kernels / 'two.cu'}"), result.error
    assert "sgemm_a, sgemm_b" in result.error and "\n" not in result.error


def test_build_and_explain_of_a_missing_entry_exit_non_zero(nvcc, two_kernels, tmp_path, monkeypatch):
    from click.testing import CliRunner
    from clitools import invoke

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path))
    path = two_kernels / "missing.yaml"
    path.write_text("name: two\nfile: two.cu\nentry: sgemm_c\ngrid: [1]\nblock: [32]\n")
    r = invoke(CliRunner(), ["build", "--spec", str(path)])
    assert r.exit_code == 1 and "entry: no kernel 'sgemm_c'" in r.output and " ok " not in r.output, r.output
    r = invoke(CliRunner(), ["explain", "1", "--spec", str(path), "--size", "256"])
    last = r.output.strip().splitlines()[-1]
    assert r.exit_code == 1 and last.startswith("error: two does not build: ") and "sgemm_c" in last, r.output
    assert "naive" in r.output  # the rung beside it is still explained
    good = two_kernels / "good.yaml"
    good.write_text("name: two_b\nfile: two.cu\nentry: sgemm_b\ngrid: [1]\nblock: [32]\n")
    assert invoke(CliRunner(), ["build", "--spec", str(good)]).exit_code == 0  # extern "C": found by its name


def test_explain_of_a_spec_that_does_not_compile_exits_non_zero(nvcc, tmp_path, monkeypatch):
    from click.testing import CliRunner
    from clitools import invoke

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    (tmp_path / "bad.cu").write_text(TWO_KERNELS.replace("C[0] = alpha;", "C[0] = undefined_name;"))
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nfile: bad.cu\nentry: sgemm_a\ngrid: [1]\nblock: [32]\n")
    r = invoke(CliRunner(), ["explain", "--spec", str(path), "--size", "256"])
    last = r.output.strip().splitlines()[-1]
    assert r.exit_code == 1 and last.startswith("error: bad does not build: ") and "undefined_name" in last, last


@pytest.mark.parametrize(("ladder", "fixture"), [("fp16", "results/h100_fix_4096.json"),
                                                 ("fp32", "results/h100_fp16_8192.json")])
def test_explain_ladder_without_its_rungs_exits_non_zero(ladder, fixture):
    from click.testing import CliRunner
    from clitools import invoke

    r = invoke(CliRunner(), ["explain", "--ladder", ladder, "--results", str(FIXTURES / fixture)])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and f"--ladder {ladder}: nothing to check" in lines[0], r.output


# ---- a --spec answering to a rung's, a baseline's or another --spec's id or name ----

def _taken() -> list[tuple[str, str]]:
    """(key, what names the owner in the refusal): every id, name and former name of a rung, every baseline."""
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.baselines import by_name

    out = [(k, str(s.path)) for s in specmod.ladder() for k in (s.id, s.name, *s.aliases)]
    return out + [(name, "cuBLAS baseline") for name in by_name()]


@settings(max_examples=200)
@given(st.sampled_from(_taken()), st.sampled_from(["name", "id", "aliases"]))
def test_a_spec_reusing_an_id_or_name_is_refused_naming_both(tmp_path_factory, taken, field):
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError

    key, owner = taken
    folder = tmp_path_factory.mktemp("dup")
    (folder / "k.cu").write_text(TWO_KERNELS)
    value = f"[{key!r}]" if field == "aliases" else repr(key)
    own = "" if field == "name" else "name: mine_unique\n"
    path = folder / "s.yaml"
    path.write_text(f"{own}{field}: {value}\nfile: k.cu\nentry: sgemm_a\ngrid: [1]\nblock: [32]\n")
    with pytest.raises(SpecError) as err:
        specmod.load_user_specs([path])
    msg = str(err.value)
    assert msg.startswith(f"{path}: {field}: {key!r} is already") and owner in msg and "\n" not in msg, msg


def test_two_specs_of_one_name_are_refused_and_a_rungs_own_file_is_the_rung(tmp_path):
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.paths import KERNELS_DIR
    from gemmprof.errors import SpecError

    (tmp_path / "k.cu").write_text(TWO_KERNELS)
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("name: mine\nfile: k.cu\nentry: sgemm_a\ngrid: [1]\nblock: [32]\n")
    with pytest.raises(SpecError, match=r"b\.yaml: name: 'mine' is already the name of .*a\.yaml"):
        specmod.load_user_specs([tmp_path / "a.yaml", tmp_path / "b.yaml"])
    assert len(specmod.load_user_specs([tmp_path / "a.yaml", tmp_path / "a.yaml"])) == 1  # the same file twice
    naive = KERNELS_DIR / "fp32" / "01_naive.yaml"
    assert specmod.load_user_specs([naive]) == [s for s in specmod.ladder() if s.id == "1"]


# ---- integers a spec or an option holds, past what their C type takes ----

C_INT = (-(2 ** 31), 2 ** 31 - 1)
BEYOND_INT = st.one_of(st.integers(C_INT[1] + 1, 2 ** 64 + 5), st.integers(-(2 ** 64), C_INT[0] - 1),
                       st.integers(10 ** 19, 10 ** 60), st.just(int("9" * 4000)))


def _spec_with(tmp, extra: str):
    path = tmp / "s.yaml"
    (tmp / "k.cu").write_text(TWO_KERNELS)
    path.write_text("name: big\nfile: k.cu\nentry: sgemm_a\ngrid: [1]\nblock: [32]\n" + extra)
    return path


@settings(max_examples=150)
@given(BEYOND_INT, st.sampled_from(["params", "tune", "args", "args text", "--param"]))
def test_an_integer_past_its_c_type_is_too_large_at_load(tmp_path_factory, value, where):
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import parse_param_overrides
    from gemmprof.errors import SpecError

    tmp = tmp_path_factory.mktemp("int")
    extra = {"params": f"params: {{BM: {value}}}\n",
             "tune": f"params: {{BM: 1}}\ntune: {{BM: [1, {value}]}}\n",
             "args": f"args: [M, N, K, alpha, A, B, beta, C, {value}]\n",
             "args text": f"args: [M, N, K, alpha, A, B, beta, C, '{value}']\n"}.get(where)
    with pytest.raises(SpecError) as err:
        if extra is None:
            parse_param_overrides([f"BM={value}"])
        else:
            specmod.load_spec(_spec_with(tmp, extra))
    msg = str(err.value)
    key = {"params": "params.BM", "tune": "tune.BM", "args": "args[8]", "args text": "args[8]", "--param": "--param"}
    assert key[where] in msg and "\n" not in msg, msg
    assert "too large" in msg or "out of range" in msg, msg
    assert str(C_INT[1]) in msg, msg  # says the range


@settings(max_examples=60)
@given(st.sampled_from(["1e39", "-1e39", "3.5e38f", "1e400", ".inf", "-.inf", ".nan", "'1e400'", "'nan'"]))
def test_a_float_literal_past_float_is_refused_at_load(tmp_path_factory, text):
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError

    path = _spec_with(tmp_path_factory.mktemp("float"), f"args: [M, N, K, alpha, A, B, beta, C, {text}]\n")
    with pytest.raises(SpecError, match=r"args\[8\]: "):
        specmod.load_spec(path)


def test_the_literals_in_range_still_load(tmp_path):
    from gemmprof.catalog import spec as specmod

    spec = specmod.load_spec(_spec_with(tmp_path, f"args: [M, N, K, alpha, A, B, beta, C, {C_INT[1]}, {C_INT[0]}, "
                                                  "3.4e38, 1.0f, '-7']\n"))
    assert [a.literal for a in spec.abi.args[8:]] == [C_INT[1], C_INT[0], 3.4e38, 1.0, -7]


def test_a_yaml_integer_too_long_for_python_is_one_line(tmp_path):
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError

    with pytest.raises(SpecError, match="number too long"):
        specmod.load_spec(_spec_with(tmp_path, f"params: {{BM: {'9' * 5000}}}\n"))


# ---- a host launcher without a kernel of its own: it builds and runs, and the build says so truthfully ----

@pytest.mark.parametrize("body", ["return (int)cudaMemsetAsync(C, 0, sizeof(float) * M * N, s);",
                                  "return (int)cudaMemcpyAsync(C, A, sizeof(float) * M * N, "
                                  "cudaMemcpyDeviceToDevice, s);"])
def test_a_launcher_without_a_kernel_of_its_own_builds_ok(nvcc, tmp_path, monkeypatch, body):
    from click.testing import CliRunner
    from clitools import invoke

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    (tmp_path / "l.cu").write_text("#include <cuda_runtime.h>\nextern \"C\" int fill(int M, int N, int K, float alpha, "
                                   "const float* A, const float* B, float beta, float* C, cudaStream_t s) {\n"
                                   f"    {body}\n}}\n")
    (tmp_path / "l.yaml").write_text("name: lib_only\nlauncher: l.cu\nentry: fill\n")
    r = invoke(CliRunner(), ["build", "--spec", str(tmp_path / "l.yaml"), "--format", "json"])
    assert r.exit_code == 0 and "failed" not in r.output, r.output
    assert '"status": "ok"' in r.output and "no __global__ kernel of its own" in r.output and "exports fill" in r.output
    (tmp_path / "l.yaml").write_text("name: lib_only\nlauncher: l.cu\nentry: fil\n")  # and a wrong entry still fails
    r = invoke(CliRunner(), ["build", "--spec", str(tmp_path / "l.yaml")])
    assert r.exit_code == 1 and "no extern \"C\" function 'fil'" in r.output, r.output


# ---- scripts/shape_sweep.py --shapes '': an error, never the whole built-in list ----

EMPTY_SHAPES = st.lists(st.sampled_from(["", " ", "\t", ",", "\n", "# 4096", ", ,", "#x\n"]), max_size=4).map("".join)


def _shape_sweep():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "shape_sweep.py"
    spec = importlib.util.spec_from_file_location("shape_sweep_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHAPE_SWEEP = _shape_sweep()


@given(EMPTY_SHAPES, st.booleans())
def test_no_shapes_given_is_an_error_never_the_built_in_list(tmp_path_factory, capsys, text, as_file):
    from gemmprof.errors import InputError
    from gemmprof.results.sweep import chosen_shapes

    tmp = tmp_path_factory.mktemp("shapes")
    args = ["--dtype", "fp32", "--out-dir", str(tmp), "--summarize-only"]
    if as_file:
        (tmp / "shapes.txt").write_text(text)
        args += ["--shapes-file", str(tmp / "shapes.txt")]
    else:
        args += ["--shapes", text]
    with pytest.raises(InputError, match="no shapes given"):
        chosen_shapes(None, str(tmp / "shapes.txt")) if as_file else chosen_shapes(text, None)
    capsys.readouterr()
    assert SHAPE_SWEEP.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no shapes given" in err[0], err


def test_a_shapes_file_that_is_a_fifo_is_refused(tmp_path, capsys):
    import os

    os.mkfifo(tmp_path / "shapes.txt")
    assert SHAPE_SWEEP.main(["--dtype", "fp32", "--out-dir", str(tmp_path), "--summarize-only", "--shapes-file",
                             str(tmp_path / "shapes.txt")]) == 2
    assert "FIFO" in capsys.readouterr().err


# ---- every file a command writes: a FIFO or a folder there is one line, never a hang or a traceback ----

WRITERS = {  # (command, option): (what else the command needs to get that far, the file's suffix)
    ("list", "--output"): ([], ".json"), ("model", "--output"): (["--size", "64"], ".json"),
    ("occupancy", "--output"): (["-t", "256", "-r", "32"], ".json"), ("gpus", "--output"): ([], ".json"),
    ("profile", "--output"): (["--from", NCU_CSV], ".json"), ("profile", "--save"): (["--from", NCU_CSV], ".json"),
    ("compare-nsys", "--output"): ([NSYS_STATS], ".json"), ("roofline", "--plot"): (["--model-only"], ".png"),
    ("roofline", "--table"): (["--model-only"], ".json"), ("show", "--output"): ([RESULTS], ".json"),
    ("diff", "--output"): ([RESULTS, RESULTS], ".json"), ("report", "--output"): ([RESULTS], ".html"),
    ("tune", "--output"): (["10", "--stand-in", "--budget-configs", "1"], ".json"),
    ("tune", "--plot"): (["10", "--stand-in", "--budget-configs", "1"], ".png"),
    ("tune", "--cache-dir"): (["10", "--stand-in", "--budget-configs", "1"], ""),
    ("build", "--output"): (["1"], ".json"), ("explain", "--output"): (["1", "--size", "64"], ".json"),
    ("sweep", "--out-dir"): (["1", "--dtype", "fp32", "--stand-in", "--shapes", "64"], ""),
}
NOT_REACHED = {("run", "--output"): "needs a GPU first", ("run", "--child-results"): "needs a GPU first",
               ("ceiling", "--output"): "needs a GPU first",
               ("profile", "--save-csv"): "needs ncu first (refused with --from)",
               ("profile", "--save-report"): "n/a", ("compare-nsys", "--save-report"): "runs nsys first"}


def test_every_output_of_the_cli_is_tried():
    found = {(name, param.opts[-1]) for name, (module, _) in COMMANDS.items()
             for param in importlib.import_module(module).command.params
             if isinstance(param.type, click.Path) and set(param.opts) & OUTPUTS}
    assert found <= set(WRITERS) | set(NOT_REACHED), found - set(WRITERS) - set(NOT_REACHED)


# (command, option, kind): a FIFO where every writer's file goes, a folder where a file is wanted (--cache-dir and
# --out-dir want a folder)
NOT_REGULAR = [(c, o, k) for c, o in sorted(WRITERS) for k in ("FIFO", "folder")
               if k == "FIFO" or o not in ("--cache-dir", "--out-dir")]


@pytest.mark.parametrize(("command", "option", "kind"), NOT_REGULAR, ids=[f"{c}:{o}-{k}" for c, o, k in NOT_REGULAR])
def test_every_writer_refuses_what_is_not_a_regular_file(tmp_path, monkeypatch, request, command, option, kind):
    import os

    if command in ("build", "explain"):
        request.getfixturevalue("nvcc")  # skips without nvcc, fails so in CI
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    before, suffix = WRITERS[(command, option)]
    target = tmp_path / f"out{suffix}"
    if kind == "FIFO":
        os.mkfifo(target)
    else:
        target.mkdir()
    argv = [command, *before, option, str(target)]
    r = _invoke_within(argv, 60, "writing")
    lines = r.output.strip().splitlines()
    assert r.exit_code != 0 and lines and lines[-1].startswith("error: "), (argv, r.output[-500:])
    assert any(w in lines[-1] for w in ("FIFO", "directory", "folder", "regular file")), (argv, lines[-1])
    assert r.exception is None or isinstance(r.exception, SystemExit), (argv, repr(r.exception))


def test_every_integer_option_is_bounded_above():
    """An unbounded count (tune --rounds 999999999 re-timed for ever) is a hang, not an input."""
    unbounded = [(name, p.opts[-1]) for name, (module, _) in COMMANDS.items()
                 for p in importlib.import_module(module).command.params
                 if isinstance(p.type, click.types.IntParamType) and getattr(p.type, "max", None) is None]
    assert unbounded == [], unbounded


# ---- a spec key of the wrong type: never read as its default (params: [] as no parameters, reads_c: 'false' as
# true, title: {a: 1} as text, name: null as 'None') ----

FALSY_NOT_MAPPING = ["''", "0", "[]", "false"]
WRONG_TYPES = [  # (key, value): each is refused naming the key
    *((k, v) for k in ("params", "derived", "traffic", "decomposition", "specialize", "ld") for v in FALSY_NOT_MAPPING),
    *((k, v) for k in ("tma_args", "dtypes") for v in ("''", "0", "{}", "false")),
    *(("reads_c", v) for v in ("'false'", "'no'", "0", "1", "[x]", "{a: 1}", "''")),
    *((k, v) for k in ("title", "description", "compiler_reason") for v in ("[x]", "{a: 1}", "true", "[]")),
    *((k, v) for k in ("name", "id") for v in ("null", "true", "1.5", ".nan", "[x]")),
]


@pytest.mark.parametrize(("key", "value"), WRONG_TYPES, ids=[f"{k}={v}" for k, v in WRONG_TYPES])
def test_a_spec_key_of_the_wrong_type_is_refused_naming_it(tmp_path, key, value):
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError

    path = _spec_with(tmp_path, f"{key}: {value}\n")
    text = path.read_text()
    if key in ("name", "id") and key + ":" in text.split("\n")[0]:
        text = "\n".join(text.split("\n")[1:])  # the one name: line is the one under test
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        specmod.load_spec(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: {key}") and "\n" not in msg, msg


def test_a_spec_key_of_the_right_type_still_loads(tmp_path):
    from gemmprof.catalog import spec as specmod

    spec = specmod.load_spec(_spec_with(tmp_path, "reads_c: true\ntitle: 7\ndescription: ' two words '\nparams: {}\n"
                                                  "derived: null\ndtypes: [fp32]\n"))
    assert spec.reads_c is True and spec.title == "7" and spec.description == "two words" and spec.params == {}


# ---- a launch number (grid, block, smem_dynamic) that is no launch: refused at load where it is a literal, at the
# shape (naming key, value and shape) where an expression gives it; never a ZeroDivisionError later ----

LAUNCH_KEYS = ["grid", "block", "smem_dynamic"]
NOT_A_LAUNCH_LITERAL = [".nan", ".inf", "-.inf", "1.5", "true", "-1", "[1]", "{a: 1}"]


def _launch_spec(tmp, key: str, value: str):
    grid, block, smem = "[1]", "[32]", "0"
    if key == "grid":
        grid = f"[{value}]"
    elif key == "block":
        block = f"[{value}]"
    else:
        smem = value
    (tmp / "k.cu").write_text(TWO_KERNELS)
    path = tmp / "s.yaml"
    path.write_text(f"name: big\nfile: k.cu\nentry: sgemm_a\ngrid: {grid}\nblock: {block}\nsmem_dynamic: {smem}\n")
    return path


@pytest.mark.parametrize("value", NOT_A_LAUNCH_LITERAL)
@pytest.mark.parametrize("key", LAUNCH_KEYS)
def test_a_launch_literal_that_is_no_launch_is_refused_at_load(tmp_path, key, value):
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError

    path = _launch_spec(tmp_path, key, value)
    with pytest.raises(SpecError) as err:
        specmod.load_spec(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: {key}") and "\n" not in msg, msg


@settings(max_examples=80)
@given(st.sampled_from(LAUNCH_KEYS), st.one_of(
    st.sampled_from(["0", "M - 100", "M - M", "'1/0'", "'M % (N - N)'", "2147483648", "1025", "65536 * 65536",
                     "nobody"]),
    st.integers(-(2 ** 40), -1).map(lambda v: f"'M * 0 + ({v})'")))
def test_a_launch_expression_out_of_range_at_the_shape_names_key_and_shape(tmp_path_factory, key, value):
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.errors import SpecError
    from gemmprof.results.shape import GemmShape

    if key == "smem_dynamic" and value in ("0", "M - M", "1025"):
        value = "M - 100"  # 0 bytes and 1025 bytes are a launch
    if key == "grid" and value == "1025":
        value = "2147483648"
    path = _launch_spec(tmp_path_factory.mktemp("launch"), key, value)
    kernel = bind(specmod.load_spec(path))
    with pytest.raises(SpecError) as err:
        kernel.launch_config(GemmShape(64, 64, 64), sms=132)
    msg = str(err.value)
    assert msg.startswith(f"{path}: {key}") and "\n" not in msg, msg
    assert "64x64x64" in msg or "division" in msg or "modulo" in msg or "unknown name" in msg, msg


def test_a_block_of_more_than_1024_threads_is_refused_naming_the_block(tmp_path):
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.errors import SpecError
    from gemmprof.results.shape import GemmShape

    path = _launch_spec(tmp_path, "block", "64, 32")
    with pytest.raises(SpecError, match=r"block: 64 x 32 x 1 threads at 64x64x64: a block holds at most 1024"):
        bind(specmod.load_spec(path)).launch_config(GemmShape(64, 64, 64))


def test_every_rung_still_launches_at_its_shapes():
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.results.shape import GemmShape

    for s in specmod.ladder():
        kernel = bind(s)
        for shape in (GemmShape(1, 1, 1), GemmShape(4095, 4097, 1023), GemmShape(6000, 10240, 8192)):
            grid, block, smem = kernel.launch_config(shape, sms=132)
            assert min(grid) >= 1 and min(block) >= 1 and smem >= 0, (s.id, shape)


@pytest.mark.parametrize("grid", ["0", "M - 100"])
def test_explain_of_a_spec_whose_grid_is_empty_is_one_line(nvcc, tmp_path, monkeypatch, grid):
    from click.testing import CliRunner
    from clitools import invoke

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    path = _launch_spec(tmp_path, "grid", grid)
    r = invoke(CliRunner(), ["explain", "--spec", str(path), "--size", "64"])
    last = r.output.strip().splitlines()[-1]
    assert r.exit_code != 0 and r.exception is None or isinstance(r.exception, SystemExit), r.output[-800:]
    assert last.startswith(f"error: {path}: grid[0]: ") and "64x64x64" in last, r.output[-800:]


# ---- a results file's unknown key (run, profile, sweep summary; at the top, in a row, in a nested record) and a key
# twice in one object: an error naming it, never read as if it were not there ----

def _results_docs():
    import json

    run = json.loads((FIXTURES / "results" / "h100_fix_4096.json").read_text())
    profile = json.loads((FIXTURES / "explain" / "profile_fp32_4096.json").read_text())
    sweep = json.loads((FIXTURES / "results" / "h100_sweep_fp32_summary.json").read_text())
    return {"run": run, "profile": profile, "sweep": sweep}


RESULTS_PLACES = [("run", ()), ("run", ("variants", 0)), ("run", ("variants", 3)), ("run", ("shape",)),
                  ("run", ("variants", 0, "timing")), ("profile", ()), ("profile", ("launches", 0)),
                  ("sweep", ()), ("sweep", ("cells", 0))]
KEYS = st.one_of(st.sampled_from(["bogus", "Variants", "samples", "median", "name ", "NAME", "schema2", ""]),
                 st.text(min_size=1, max_size=12))


def _known_keys(place) -> frozenset:
    from gemmprof.results import profile, run, sweep

    return {("run", 0): run.RUN_KEYS, ("run", 2): run.VARIANT_KEYS, ("run", 1): run.NESTED_KEYS["shape"],
            ("run", 3): run.NESTED_KEYS["timing"], ("profile", 0): profile.PROFILE_KEYS,
            ("profile", 2): profile.LAUNCH_KEYS, ("sweep", 0): sweep.SWEEP_KEYS,
            ("sweep", 2): sweep.CELL_KEYS}[(place[0], len(place[1]) if place[1][:1] != ("shape",) else 1)]


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(RESULTS_PLACES), KEYS, st.sampled_from([1, None, "x", [], {}]))
def test_an_unknown_key_in_a_results_file_is_refused_naming_it(tmp_path_factory, place, key, value):
    import copy
    import json

    from click.testing import CliRunner
    from clitools import invoke

    kind, at = place
    doc = copy.deepcopy(_results_docs()[kind])
    node = doc
    for step in at:
        node = node[step]
    if key in node or key in _known_keys(place):
        return  # a key the layout has
    node[key] = value
    path = tmp_path_factory.mktemp("unknown") / f"{kind}.json"
    path.write_text(json.dumps(doc))
    r = invoke(CliRunner(), ["show", str(path)])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and "unknown key" in lines[0], (place, key, r.output[-400:])
    assert repr(key[:40]) in lines[0] and str(path) in lines[0], lines[0]


@pytest.mark.parametrize("kind", ["run", "profile", "sweep"])
def test_every_results_layout_without_additions_still_loads(tmp_path, kind):
    import json

    from click.testing import CliRunner
    from clitools import invoke

    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(_results_docs()[kind]))
    assert invoke(CliRunner(), ["show", str(path)]).exit_code == 0


def test_what_each_results_layout_writes_is_a_key_it_reads():
    from gemmprof.results.profile import LAUNCH_KEYS, PROFILE_KEYS, ProfileResults
    from gemmprof.results.run import RUN_KEYS, VARIANT_KEYS, RunResult
    from gemmprof.results.sweep import CELL_KEYS, SWEEP_KEYS, SweepSummary

    docs = _results_docs()
    run = RunResult.from_dict(docs["run"]).to_dict()
    assert set(run) <= RUN_KEYS and all(set(v) <= VARIANT_KEYS for v in run["variants"])
    profile = ProfileResults.from_dict(docs["profile"]).to_dict()
    assert set(profile) <= PROFILE_KEYS and all(set(x) <= LAUNCH_KEYS for x in profile["launches"])
    sweep = SweepSummary.from_dict(docs["sweep"]).to_dict()
    assert set(sweep) <= SWEEP_KEYS and all(set(c) <= CELL_KEYS for c in sweep["cells"])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["run", "profile", "sweep"]), st.data())
def test_a_key_twice_in_one_object_is_refused_naming_it(tmp_path_factory, kind, data):
    import json

    from click.testing import CliRunner
    from clitools import invoke

    doc = _results_docs()[kind]
    key = data.draw(st.sampled_from(sorted(doc)))
    text = json.dumps(doc)
    text = "{" + json.dumps(key) + ": " + json.dumps(doc[key]) + ", " + text[1:]
    path = tmp_path_factory.mktemp("twice") / f"{kind}.json"
    path.write_text(text)
    r = invoke(CliRunner(), ["show", str(path)])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and f"key {key!r} appears twice" in lines[0], r.output[-300:]


# ---- a --callable module or function that calls sys.exit: one line naming it, never gemmprof exiting silently
# with the callable's status (and at call time its variant fails, the run goes on) ----

EXITS = ["sys.exit(3)", "sys.exit(0)", "sys.exit()", "sys.exit('bye')", "raise SystemExit(7)", "exit(1)", "quit()"]


@pytest.mark.parametrize("how", EXITS)
def test_a_callable_module_that_exits_on_import_is_one_line(tmp_path, monkeypatch, how):
    from click.testing import CliRunner
    from clitools import invoke

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    path = tmp_path / f"exits_{EXITS.index(how)}.py"
    path.write_text(f"import sys\n{how}\ndef gemm(A, B, C, alpha, beta):\n    pass\n")
    r = invoke(CliRunner(), ["run", "--size", "64", "--callable", f"{path}:gemm"])  # imported before the GPU is sought
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and lines and lines[-1].startswith(f"error: --callable {path}:gemm: importing "), \
        (how, r.exit_code, r.output[-400:])
    assert "called sys.exit(" in lines[-1], lines[-1]


@pytest.mark.parametrize("how", EXITS)
def test_a_callable_that_exits_when_called_fails_its_variant(how):
    from gemmprof.measure import callables

    namespace: dict = {}
    exec(f"import sys\ndef gemm(A, B, C, alpha, beta):\n    {how}\n", namespace)  # noqa: S102 - the test's own code

    class Arrays:
        @staticmethod
        def operands(problem):
            return None, None

        @staticmethod
        def scales(problem):
            return {}

        @staticmethod
        def output(out, c_dtype):
            return out, None, None

    class Problem:
        alpha, beta, c_dtype = 1.0, 0.0, "fp32"

    launch = callables._launcher(namespace["gemm"], Arrays)(Problem(), None)
    with pytest.raises(callables.CallableRaised, match=r"^called sys\.exit\("):
        launch()


# ---- an ncu details CSV whose 'Metric Name' or 'Metric Value' column was renamed or cut: refused, never read as a
# raw table of launches without values (exit 0 and a table of dashes) ----

@pytest.mark.parametrize("column", ["Metric Name", "Metric Value"])
@pytest.mark.parametrize("renamed", ["", "Metric", "metric value", "Metric Value ", "Value"])
def test_a_details_csv_missing_half_of_its_metric_columns_is_refused(tmp_path, column, renamed):
    from click.testing import CliRunner
    from clitools import invoke

    details = [p for p in NCU_CSVS if "Metric Value" in p.read_text(encoding="utf-8")]
    assert details
    for source in details:
        text = source.read_text(encoding="utf-8").replace(f'"{column}"', f'"{renamed}"')
        if renamed in ("Metric Name", "Metric Value"):
            continue
        path = tmp_path / source.name
        path.write_text(text)
        r = invoke(CliRunner(), ["profile", "--from", str(path)])
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and "nothing to show" in lines[0], (source.name, r.output[-300:])
        assert "without 'Metric" in lines[0] and "table left out" in lines[0], lines[0]


# ---- a GPU spec sheet's unknown key, at the top, in a fixed mapping or in a {value, source} figure: refused ----

GPU_PLACES = [(), ("l2",), ("memory",), ("sm_limits",), ("sm_count",), ("peak_tflops", "fp32"), ("l2", "size_mib")]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(GPU_PLACES), st.sampled_from(["bogus", "size_mb", "Value", "sources", "clock", "note"]))
def test_an_unknown_key_in_a_gpu_spec_is_refused_naming_it(tmp_path_factory, place, key):
    import yaml
    from click.testing import CliRunner
    from clitools import invoke

    from gemmprof.catalog.paths import PROFILES_DIR

    doc = yaml.safe_load((PROFILES_DIR / "h100_sxm.yaml").read_text())
    node = doc
    for step in place:
        node = node[step]
    node[key] = {"value": 1, "source": "whitepaper"}
    path = tmp_path_factory.mktemp("gpu") / "mine.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = invoke(CliRunner(), ["model", "--size", "64", "--gpu-file", str(path)])
    lines = r.output.strip().splitlines()
    where = ".".join((*place, key))
    assert r.exit_code == 2 and len(lines) == 1 and f"{path}: {where}: unknown key" in lines[0], r.output[-300:]


def test_every_shipped_gpu_spec_uses_only_known_keys():
    from gemmprof.catalog.gpu_specs import all_gpus

    all_gpus.cache_clear()
    assert len(all_gpus()) >= 2
