"""The `tune:` space in a spec: parsing, validation, enumeration and pruning before anything compiles."""

import pytest
from tune_helpers import SHAPE, toy_spec, write_spec

from gemmprof.catalog.spec import load_spec, select
from gemmprof.errors import SpecError
from gemmprof.model.traffic import GemmShape
from gemmprof.tune.space import config_key, enumerate_space


def test_space_parsed_and_pruned(tmp_path):
    spec = toy_spec(tmp_path)
    assert spec.tune == {"BM": (32, 64, 128, 256), "BN": (32, 64, 128, 256), "BK": (8, 16, 32, 64)}
    space = enumerate_space(spec, SHAPE)
    assert space.total == 64
    # BK <= BM drops BM=32 with BK=64 (4 of them); THREADS = BM*BN/64 stays <= 1024 throughout
    expected = [(bm, bn, bk) for bm in (32, 64, 128, 256) for bn in (32, 64, 128, 256) for bk in (8, 16, 32, 64)
                if bm * bn // 64 <= 1024 and bk <= bm]
    assert [(p["BM"], p["BN"], p["BK"]) for p in space.valid] == expected
    assert len(space.rejected) == 64 - len(expected)
    assert "64 configurations" in space.describe() and f"{len(expected)} left" in space.describe()


def test_shape_constraints_prune_for_the_chosen_shape(tmp_path):
    spec = toy_spec(tmp_path)
    at_96 = enumerate_space(spec, GemmShape(96, 96, 96))  # only BM=32 divides 96
    assert {p["BM"] for p in at_96.valid} == {32}
    assert any("multiple of BM" in r.reason and "96x96x96" in r.reason for r in at_96.rejected)


def test_empty_after_pruning_is_one_clear_error(tmp_path):
    spec = toy_spec(tmp_path)
    with pytest.raises(SpecError, match=r"all 64 configurations are rejected at 100x100x100"):
        enumerate_space(spec, GemmShape(100, 100, 100))


@pytest.mark.parametrize("tune, problem", [
    ("tune:\n  XX: [1, 2]\n", r"tune\.XX: not a parameter"),
    ("tune:\n  BM: []\n", r"tune\.BM: expected a non-empty list"),
    ("tune:\n  BM: [32, 6.5]\n", r"tune\.BM: expected integers"),
    ("tune:\n  BM: [32, yes]\n", r"tune\.BM: expected integers"),
    ("tune: [BM]\n", r"tune: expected a mapping"),
])
def test_bad_tune_spaces_name_file_and_key(tmp_path, tune, problem):
    path = write_spec(tmp_path, tune=tune)
    with pytest.raises(SpecError, match=problem) as info:
        load_spec(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_constraint_that_cannot_be_evaluated(tmp_path):
    path = write_spec(tmp_path)
    text = path.read_text().replace("check: BK <= BM", "check: BK <= BMX")
    path.write_text(text)
    with pytest.raises(SpecError, match=r"constraint 'BK <= BMX' cannot be evaluated with .*unknown name 'BMX'"):
        enumerate_space(load_spec(path), SHAPE)


def test_spec_without_tune_space(tmp_path):
    spec = toy_spec(tmp_path, tune="")
    with pytest.raises(SpecError, match="has no `tune:` space"):
        enumerate_space(spec, SHAPE)


def test_ladder_spaces_match_the_old_sweeps():
    """Rungs 9-12 carry the grids of scripts/tune.sh (11: the sweep of benchmarks/2026-11-22_h100_tuning)."""
    sizes = {}
    for rung in ("9", "10", "11", "12"):
        spec = select([rung])[0]
        space = enumerate_space(spec, GemmShape(4096, 4096, 4096))
        sizes[rung] = (space.total, len(space.valid))
        defaults_in_space = all(spec.params[k] in v for k, v in spec.tune.items())
        assert defaults_in_space, f"rung {rung}: its tuned defaults are not among its candidates"
        assert space.contains(spec.params), f"rung {rung}: its defaults are pruned"
    assert sizes["9"][0] == 3 * 3 * 3 * 2 * 2 and sizes["10"][0] == 256 and sizes["12"][0] == 128


def test_config_key_is_order_free():
    assert config_key({"B": 1, "A": 2}) == config_key({"A": 2, "B": 1}) == "A=2,B=1"
