"""benchmarks/ holds what readers need and stays small: under 5 MB in all (benchmarks/README.md, "What never goes in,
and what leaves"), every record folder with a README.md, and every record listed in the index."""

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
CAP_BYTES = 5_000_000


def _records():
    return sorted(p for p in BENCHMARKS.iterdir() if p.is_dir())


def test_benchmarks_stay_under_the_cap():
    files = [p for p in BENCHMARKS.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert len(files) > 50  # the records are there: the cap is not met by an empty folder
    biggest = sorted(((p.stat().st_size, str(p.relative_to(BENCHMARKS))) for p in files), reverse=True)[:5]
    assert total < CAP_BYTES, f"benchmarks/ holds {total / 1e6:.2f} MB (cap 5 MB); largest files: {biggest}"


def test_every_record_has_a_readme_and_an_index_line():
    index = (BENCHMARKS / "README.md").read_text()
    records = _records()
    assert len(records) >= 30
    assert [r.name for r in records if not (r / "README.md").is_file()] == []
    assert [r.name for r in records if f"]({r.name}/README.md)" not in index] == []
