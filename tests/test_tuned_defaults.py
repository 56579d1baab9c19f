"""`gemmprof tune --keep` winners become a device's starting parameters in the one kernel selection."""

import json

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.selection import choose
from gemmprof.catalog.sources import source_hash


def _keep(tmp_path, monkeypatch, params, digest=None):
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path))
    spec = specmod.select(["10"])[0]
    entry = {"params": params, "shape": "4096x4096x4096", "dtype": "fp32", "tflops": 44.0,
             "source_hash": digest or source_hash(spec), "strategy": "exhaustive", "cache_file": "x.jsonl",
             "kept": "2026-11-23T21:00:00+00:00"}
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune" / "tuned_defaults.json").write_text(json.dumps(
        {"kind": "gemmprof.tuned-defaults", "version": 1, "devices": {"Fake GPU": {spec.name: entry}}}))
    return spec


def test_kept_parameters_start_the_rung_on_that_device_only(tmp_path, monkeypatch):
    spec = _keep(tmp_path, monkeypatch, {"BK": 8, "NOT_A_PARAM": 3})
    (k,) = choose(["10"], tuned_for="Fake GPU")
    assert k.params["BK"] == 8 and k.params_source.startswith("tuned on Fake GPU at 4096x4096x4096")
    assert spec.params["BK"] != 8  # the spec's own default differs
    (other,) = choose(["10"], tuned_for="Another GPU")
    assert other.params == spec.params and other.params_source == ""
    (explicit,) = choose(["10"], tuned_for="Fake GPU", params=["BK=16"])
    assert explicit.params["BK"] == 16  # --param wins over the kept value


def test_kept_parameters_of_an_older_source_are_ignored(tmp_path, monkeypatch):
    spec = _keep(tmp_path, monkeypatch, {"BK": 8}, digest="0" * 16)
    (k,) = choose(["10"], tuned_for="Fake GPU")
    assert k.params == spec.params and k.params_source == ""


def _result():
    from types import SimpleNamespace

    return SimpleNamespace(winner_params={"BK": 8}, verdict=None, best=SimpleNamespace(tflops=44.0),
                           shape={"M": 4096, "N": 4096, "K": 4096}, device="Fake GPU", kernel="warptiling",
                           dtype="fp32", strategy="exhaustive", cache_file="x.jsonl")


def test_a_damaged_defaults_file_is_named_and_the_winner_kept_beside_it(tmp_path):
    import pytest

    from gemmprof.catalog.tuned_defaults import (
        DEFAULTS_FILE,
        DefaultsFileError,
        keep_winner,
        load_tuned_defaults,
    )

    for damage in (b'{"kind": "gemmprof.tuned-defaults", "devi', b"\xff\xfe", b"[1, 2]",
                   b'{"kind": "gemmprof.tuned-defaults", "version": 1, "devices": {"Fake GPU": [1]}}'):
        path = tmp_path / DEFAULTS_FILE
        path.write_bytes(damage)
        with pytest.raises(DefaultsFileError, match=DEFAULTS_FILE) as info:
            keep_winner(tmp_path, _result(), "abc")
        assert path.read_bytes() == damage  # the damaged file is left for the user to look at
        beside = tmp_path / "tuned_defaults.new.json"
        assert str(beside) in str(info.value) and info.value.kept_beside == beside
        doc = json.loads(beside.read_text())
        assert doc["devices"]["Fake GPU"]["warptiling"]["params"] == {"BK": 8}
        with pytest.raises(DefaultsFileError):
            load_tuned_defaults(tmp_path, "Fake GPU", "warptiling")


def test_a_mistyped_kept_entry_is_named(tmp_path, monkeypatch):
    import pytest

    from gemmprof.catalog.tuned_defaults import load_tuned_defaults
    from gemmprof.errors import InputError

    _keep(tmp_path, monkeypatch, {"BK": "8"})
    with pytest.raises(InputError, match=r"params: expected an object of integers"):
        load_tuned_defaults(tmp_path / "tune", "Fake GPU", "warptiling")
