"""Property tests: every reader, fed real fixtures with mutated cells, fields and types, returns a result or raises
gemmprof's own error with a message; never a traceback. Profile `ci` (default) runs 1000 examples per reader;
HYPOTHESIS_PROFILE=slow (or `pytest -m slow`) runs more."""

from __future__ import annotations

import atexit
import csv
import io
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

import yaml
from conftest import FIXTURES
from fuzzing import (
    JSON_POOL,
    NASTY_JSON,
    apply_flips,
    expect_gemmprof_error,
    flipped_bytes,
    json_text,
    mutated_csv,
    mutated_text,
    mutated_tree,
)
from hypothesis import given
from hypothesis import strategies as st

from gemmprof.adapters.ncu.findings import analyse
from gemmprof.adapters.ncu.report import parse_csv
from gemmprof.adapters.nsys.compare import compare
from gemmprof.adapters.nsys.report import load_report
from gemmprof.adapters.nsys.text import parse_stats, parse_text
from gemmprof.catalog import expr
from gemmprof.catalog.binding import bind
from gemmprof.catalog.gpu_specs import get_gpu, parse_gpu_spec
from gemmprof.catalog.spec import parse_spec
from gemmprof.model.traffic import GemmShape
from gemmprof.render.profile_tables import tables as profile_tables
from gemmprof.render.run_tables import run_table
from gemmprof.render.table import _sanitised, to_csv, to_json
from gemmprof.results.files import parse_json
from gemmprof.results.profile import ProfileResults
from gemmprof.results.run import RunResult

DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
ROOT = Path(__file__).resolve().parents[1]
H100 = get_gpu("h100")
NCU = {p.name: p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "ncu").glob("*.csv"))}
NCU_DETAILS = [t for n, t in NCU.items() if "details" in n]
NCU_RAW = [t for n, t in NCU.items() if "raw" in n]
STATS_TEXT = [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "nsys").glob("*.txt"))]
RUNS = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((FIXTURES / "results").glob("*.json"))]
GPU_YAML = [(p, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in sorted((ROOT / "profiles").glob("*.yaml"))]
SPEC_YAML = [(p, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in sorted((ROOT / "kernels").glob("*/*.yaml"))]


def _render(table):
    """What emit() writes for JSON and CSV."""
    to_json(_sanitised(table)), to_csv(table)


def _ncu_pipeline(text: str):
    report = expect_gemmprof_error(parse_csv, text)
    if report is None:
        return
    findings = expect_gemmprof_error(analyse, report, H100, GemmShape(4096, 4096, 4096))
    if findings is None:
        return
    results = ProfileResults(findings, gpu=report.gpu, gpu_spec="h100", shape=None, source={}, notes=[])
    doc = json.loads(json.dumps(results.to_dict()))
    for t in profile_tables(ProfileResults.from_dict(doc)):
        _render(t)


def _head(text: str, rows: int) -> str:
    """The fixture with its table cut after `rows` rows (messages and program output kept): each example reads,
    analyses and renders a launch or two, not eight, so 1000 examples stay within CI's time."""
    out, seen = [], None
    for line in text.splitlines():
        if line.startswith('"ID",'):
            seen = 0
        elif seen is not None and line.startswith('"'):
            seen += 1
            if seen > rows:
                continue
        out.append(line)
    return "\n".join(out) + "\n"


NCU_DETAILS_SMALL = [_head(t, 130) for t in NCU_DETAILS]  # a details launch is ~60-110 rows
NCU_RAW_SMALL = [_head(t, 3) for t in NCU_RAW]  # the units row and two launches (~1000 columns each)


@given(st.sampled_from(NCU_DETAILS_SMALL).flatmap(mutated_csv))
def test_ncu_details_csv(text):
    _ncu_pipeline(text)


@given(st.sampled_from(NCU_RAW_SMALL).flatmap(mutated_csv))
def test_ncu_raw_csv(text):
    _ncu_pipeline(text)


def _stats_csv(text: str) -> str:
    """The fixture's kernel summary as `nsys stats --format csv` writes it (same headers, same cells)."""
    table = next(t for t in parse_text(text) if t.kind == "kernels")
    lines = text.splitlines()[table.line:]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(table.headers)
    for line in lines[1:1 + len(table.rows)]:
        cells = line.split()
        writer.writerow(cells[:len(table.headers) - 1] + [" ".join(cells[len(table.headers) - 1:])])
    return buf.getvalue()


def _nsys_pipeline(report):
    if report is None:
        return
    for t in expect_gemmprof_error(_tables, report) or []:
        _render(t)


def _tables(report):
    from gemmprof.render.nsys_tables import tables

    cmp = compare([report], shape=GemmShape(4096, 4096, 4096))
    return tables(cmp, "json") + tables(cmp, "table")


@given(st.sampled_from(STATS_TEXT).flatmap(mutated_text))
def test_nsys_stats_text(text):
    _nsys_pipeline(expect_gemmprof_error(parse_stats, text, "stats.txt", "text"))


STATS_CSV = [_stats_csv(t) for t in STATS_TEXT if any(x.kind == "kernels" for x in parse_text(t))]


@given(st.sampled_from(STATS_CSV).flatmap(mutated_csv))
def test_nsys_stats_csv(text):
    _nsys_pipeline(expect_gemmprof_error(parse_stats, text, "stats.csv", "csv"))


READ_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "StringIds",
               "TARGET_INFO_GPU", "META_DATA_EXPORT", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _slim(path: Path, folder: Path) -> Path:
    """The real export less the tables the reader never opens: the same cells, a tenth of the copying."""
    out = folder / path.name
    shutil.copyfile(path, out)
    con = sqlite3.connect(out)
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        if name not in READ_TABLES:
            con.execute(f'DROP TABLE "{name}"')
    con.commit()
    con.execute("VACUUM")
    con.close()
    return out


_SLIM_DIR = Path(tempfile.mkdtemp(prefix="gemmprof-fuzz-"))
atexit.register(shutil.rmtree, _SLIM_DIR, True)
SQLITE = [_slim(FIXTURES / "nsys" / n, _SLIM_DIR) for n in ("h100_cupy_nvtx.sqlite", "h100_gemmprof_run_4096.sqlite")]
SQL_VALUES = [None, -1, 0, 2 ** 63 - 1, -(2 ** 63), 1.5, 1e308, "abc", "", "12", b"\xff\xfe\x00", b"",
              "gemmprof 1 4096x4096x4096", "é" * 3,
              # issue 29's classes, as SQLite holds them (NaN is stored as NULL; integers stop at 2**63)
              float("nan"), float("inf"), float("-inf"), "1e400", "9" * 5000, "²", "٣٢", "１２８", -5, " "]


def _db_columns(path):
    con = sqlite3.connect(path)
    tables = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    wanted = [t for t in tables if t.startswith(("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
                                                 "NVTX_EVENTS", "StringIds", "TARGET_INFO", "CUPTI_ACTIVITY_KIND_MEM",
                                                 "META_DATA", "ENUM_NSYS_EVENT_TYPE"))]
    cols = [(t, r[1]) for t in wanted for r in con.execute(f'PRAGMA table_info("{t}")')]
    con.close()
    return cols


COLUMNS = {p: _db_columns(p) for p in SQLITE}


@st.composite
def sqlite_edits(draw):
    path = draw(st.sampled_from(SQLITE))
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        table, col = draw(st.sampled_from(COLUMNS[path]))
        edits.append((table, col, draw(st.sampled_from(SQL_VALUES)), draw(st.integers(0, 40)),
                      draw(st.booleans())))
    return path, edits


@given(case=sqlite_edits())
def test_nsys_sqlite(case):
    path, edits = case
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "mutated.sqlite"
        shutil.copyfile(path, target)
        con = sqlite3.connect(target)
        con.execute("PRAGMA synchronous = OFF")
        con.execute("PRAGMA journal_mode = MEMORY")
        for table, col, value, offset, every in edits:
            if isinstance(value, bytes) and value and offset % 2:
                value = value.decode("latin-1")  # text that is not what nsys writes
            where = "" if every else f' WHERE rowid IN (SELECT rowid FROM "{table}" LIMIT 1 OFFSET {offset})'
            try:
                con.execute(f'UPDATE "{table}" SET "{col}" = ?{where}', (value,))
            except sqlite3.IntegrityError:  # a UNIQUE or NOT NULL column: nsys never writes that either
                continue
        con.commit()
        con.close()
        _nsys_pipeline(expect_gemmprof_error(load_report, target))


@given(case=flipped_bytes(SQLITE))
def test_nsys_sqlite_byte_flips(case):
    """Bytes flipped anywhere in the file, the schema pages included (sqlite_master's text may stop being UTF-8)."""
    path, flips = case
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "flipped.sqlite"
        target.write_bytes(apply_flips(path, flips))
        _nsys_pipeline(expect_gemmprof_error(load_report, target))


@given(st.sampled_from(RUNS).flatmap(lambda d: mutated_tree(d, JSON_POOL, max_edits=3)))
def test_run_results_json(doc):
    doc = expect_gemmprof_error(parse_json, json_text(doc), "results.json")  # what load() reads
    if doc is None:
        return
    result = expect_gemmprof_error(RunResult.from_dict, doc, "results.json")
    if result is not None:
        _render(run_table(result))
        from gemmprof.model import roofline_sources as sources

        choice = sources.RooflineChoice(dtype=None, baselines=True, measured=True, ceiling="datasheet")
        expect_gemmprof_error(sources.from_results, [("results.json", result)], None, choice, lambda _: H100, None)


PROFILE_DOCS = []
for _text in NCU_DETAILS[:2] + NCU_RAW[:1]:
    _rep = parse_csv(_text)
    PROFILE_DOCS.append(json.loads(json.dumps(ProfileResults(
        analyse(_rep, H100, GemmShape(4096, 4096, 4096)), gpu=_rep.gpu, gpu_spec="h100",
        shape=GemmShape(4096, 4096, 4096), source={"csv": "x.csv"}, notes=[]).to_dict())))


@given(st.sampled_from(PROFILE_DOCS).flatmap(lambda d: mutated_tree(d, JSON_POOL, max_edits=3)))
def test_profile_results_json(doc):
    doc = expect_gemmprof_error(parse_json, json_text(doc), "profile.json")
    if doc is None:
        return
    results = expect_gemmprof_error(ProfileResults.from_dict, doc, "profile.json")
    if results is not None:
        for t in profile_tables(results):
            _render(t)


@given(st.sampled_from(GPU_YAML).flatmap(lambda pd: st.tuples(st.just(pd[0]), mutated_tree(pd[1]))))
def test_gpu_spec_yaml(case):
    path, doc = case
    gpu = expect_gemmprof_error(parse_gpu_spec, path, yaml.dump(doc, Dumper=DUMPER))
    if gpu is not None:
        for kind in ("fp32", "fp16", "tf32"):
            expect_gemmprof_error(gpu.peak_flops, kind)
        expect_gemmprof_error(lambda: gpu.dram_bandwidth)


SPEC_VALUES = [*NASTY_JSON, 5, "x" * 300, "../../etc/passwd", "a/b.cu", ["BM", ["BN"]], "BM*", "cdiv(M, 0)",
               "min()", "(" * 50 + "1" + ")" * 50, "1" + "+1" * 5000, "M / 0", "BM // BN", 2 ** 40]


@given(st.sampled_from(SPEC_YAML).flatmap(lambda pd: st.tuples(st.just(pd[0]), mutated_tree(pd[1], SPEC_VALUES))))
def test_kernel_spec_yaml(case):
    path, doc = case
    spec = expect_gemmprof_error(parse_spec, path, yaml.dump(doc, Dumper=DUMPER))
    if spec is not None:
        bound = expect_gemmprof_error(bind, spec)
        if bound is not None:
            for shape in (GemmShape(4096, 4096, 4096), GemmShape(1, 3, 4097)):
                expect_gemmprof_error(bound.check_shape, shape)
                expect_gemmprof_error(bound.launch_config, shape)
                expect_gemmprof_error(bound.tiles)


ATOMS = st.sampled_from(["M", "N", "K", "BM", "0", "1", "-1", "7", "32", "1.5", "2**70", "True", "x", "cdiv", "min",
                         "max", "'s'", "None", "1e400", "9" * 60])
OPS = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "==", "<", ">=", " and ", " or ", "&", "<<", "@"])


@st.composite
def expressions(draw, depth=0):
    if depth > 6 or draw(st.integers(0, 3)) == 0:
        return draw(ATOMS)
    kind = draw(st.integers(0, 5))
    sub = lambda: draw(expressions(depth + 1))  # noqa: E731
    if kind == 0:
        return f"({sub()}{draw(OPS)}{sub()})"
    if kind == 1:
        fn = draw(st.sampled_from(["cdiv", "min", "max", "abs", "int"]))
        return f"{fn}({', '.join(sub() for _ in range(draw(st.integers(0, 3))))})"
    if kind == 2:
        return f"({sub()} if {sub()} else {sub()})"
    if kind == 3:
        return draw(st.sampled_from(["-", "not ", "+", "~"])) + sub()
    if kind == 4:
        return draw(st.sampled_from(["(" * 400 + "1" + ")" * 400, "-" * 3000 + "1", "1" + "+1" * 3000,
                                     "max(" * 300 + "1" + ")" * 300]))
    return draw(st.text(max_size=20))


@given(expressions())
def test_expression_evaluator(text):
    env = {"M": 4096, "N": 0, "K": -3, "BM": 64, "s": 1}
    expect_gemmprof_error(expr.names, text)
    value = expect_gemmprof_error(expr.evaluate, text, env)
    assert value is None or isinstance(value, (int, float, bool))



def _cache_text() -> str:
    from gemmprof.tune.cache import CacheKey, TuneCache
    from gemmprof.tune.records import TIMED, Record

    with tempfile.TemporaryDirectory() as tmp:
        key = CacheKey("NVIDIA H100 80GB HBM3", "nvrtc 13.0", "warptiling", "abc", "fp32", "4096x4096x4096")
        cache = TuneCache.open(tmp, key)
        for bm in (64, 128):
            cache.add(Record({"BM": bm, "BK": 8}, TIMED, "", (1.0, 1.5), {"registers": 96}))
        cache.add_retime(["BK=8,BM=64", "BK=8,BM=128"], {"BK=8,BM=64": [1.0]}, 3)
        cache.close()
        return (Path(tmp) / key.filename()).read_text(encoding="utf-8"), key


CACHE_TEXT, CACHE_KEY = _cache_text()


@given(text=mutated_text(CACHE_TEXT), cut=st.integers(0, 40))
def test_tune_cache_lines(text, cut):
    """A damaged cache opens with its good lines (the bad ones named in warnings) or is one InputError."""
    from gemmprof.tune.cache import TuneCache

    data = text.encode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / CACHE_KEY.filename()).write_bytes(data[:len(data) - cut] if cut % 3 == 0 else data)
        cache = expect_gemmprof_error(TuneCache.open, tmp, CACHE_KEY)
        if cache is not None:
            assert all(w.startswith(str(cache.path)) for w in cache.warnings)
            cache.close()
