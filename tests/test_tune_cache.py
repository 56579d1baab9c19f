"""The sweep cache: one JSON line per configuration, flushed as written, tolerant of a kill mid-write."""

import json

import pytest

from gemmprof.errors import InputError
from gemmprof.tune.cache import CacheKey, TuneCache
from gemmprof.tune.records import COMPILE_ERROR, TIMED, Record

KEY = CacheKey("NVIDIA H100 80GB HBM3", "nvrtc 13.0 (cupy 14.2.0)", "warptiling", "abc123", "fp32", "4096x4096x4096")


def _rec(bm, status=TIMED, samples=(1.0, 1.1, 0.9)):
    return Record({"BM": bm, "BK": 8}, status, "" if status == TIMED else "kernel.cu(3): error: x",
                  samples if status == TIMED else ())


def test_one_file_per_key_and_round_trip(tmp_path):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64))
    c.add(_rec(128, COMPILE_ERROR))
    c.close()
    other = CacheKey(**{**KEY.to_dict(), "shape": "2048x2048x2048"})
    assert KEY.filename() != other.filename() and KEY.filename().endswith(".jsonl")
    again = TuneCache.open(tmp_path, KEY)
    assert again.get({"BK": 8, "BM": 64}).samples_ms == (1.0, 1.1, 0.9)
    assert again.get({"BM": 128, "BK": 8}).status == COMPILE_ERROR
    lines = (tmp_path / KEY.filename()).read_text().splitlines()
    assert json.loads(lines[0])["key"] == KEY.to_dict() and len(lines) == 3


def test_each_line_is_on_disk_as_soon_as_it_is_added(tmp_path):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64))
    text = (tmp_path / KEY.filename()).read_text()  # read while the writer still holds the file open
    assert text.count("\n") == 2 and '"BM":64' in text
    c.close()


def test_truncated_last_line_is_dropped_and_trimmed(tmp_path):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64))
    c.add(_rec(128))
    c.close()
    path = tmp_path / KEY.filename()
    data = path.read_bytes()
    path.write_bytes(data[:-15])  # killed in the middle of the last line
    c = TuneCache.open(tmp_path, KEY)
    assert c.dropped_partial_line
    assert c.get({"BM": 64, "BK": 8}) is not None and c.get({"BM": 128, "BK": 8}) is None
    c.add(_rec(256))  # appends start on a fresh line
    c.close()
    c = TuneCache.open(tmp_path, KEY)
    assert c.get({"BM": 256, "BK": 8}) is not None and not c.dropped_partial_line


@pytest.mark.parametrize("bad", [b"{not json", b"[1, 2]", b'{"status": "timed"}', b'{"params": {"BM": "64"}, '
                                 b'"status": "timed"}', b'{"params": {"BM": 64}, "status": "timed", "samples_ms": '
                                 b'[NaN]}', b"\xff\xfe{}", b'{"params": {"BM": 1' + b"0" * 5000 + b'}}',
                                 b'{"kind": "retime", "candidates": 3}', b"\x00\x00\x00"])
def test_a_damaged_line_in_the_middle_is_named_and_left_out(tmp_path, bad):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64))
    c.close()
    path = tmp_path / KEY.filename()
    path.write_bytes(path.read_bytes() + bad + b"\n" + json.dumps(_rec(128).to_dict()).encode() + b"\n")
    c = TuneCache.open(tmp_path, KEY)
    assert len(c.warnings) == 1 and c.warnings[0].startswith(f"{path}:3"), c.warnings
    assert c.get({"BM": 64, "BK": 8}) is not None and c.get({"BM": 128, "BK": 8}) is not None
    c.close()


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64))
    c.close()
    path = tmp_path / KEY.filename()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # killed between the record and its newline
    c = TuneCache.open(tmp_path, KEY)
    assert c.get({"BM": 64, "BK": 8}) is not None and not c.dropped_partial_line and not c.warnings
    c.add(_rec(128))  # the append starts a new line
    c.close()
    c = TuneCache.open(tmp_path, KEY)
    assert c.get({"BM": 64, "BK": 8}) is not None and c.get({"BM": 128, "BK": 8}) is not None and not c.warnings


def test_a_cache_of_nul_bytes_is_named_not_truncated(tmp_path):
    path = tmp_path / KEY.filename()
    path.write_bytes(b"\x00" * 4096)
    with pytest.raises(InputError, match="NUL bytes"):
        TuneCache.open(tmp_path, KEY)
    assert path.read_bytes() == b"\x00" * 4096


def test_a_damaged_header_is_an_error(tmp_path):
    path = tmp_path / KEY.filename()
    path.write_bytes(b"[1, 2]\n" + json.dumps(_rec(64).to_dict()).encode() + b"\n")
    with pytest.raises(InputError, match=r":1: not a JSON object"):
        TuneCache.open(tmp_path, KEY)


def test_a_file_for_another_key_is_refused(tmp_path):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64))
    c.close()
    other = CacheKey(**{**KEY.to_dict(), "device": "NVIDIA A100"})
    (tmp_path / other.filename()).write_bytes((tmp_path / KEY.filename()).read_bytes())
    with pytest.raises(InputError, match="written for"):
        TuneCache.open(tmp_path, other)


def test_last_record_of_a_key_wins_and_retimes_are_kept(tmp_path):
    c = TuneCache.open(tmp_path, KEY)
    c.add(_rec(64, COMPILE_ERROR))
    c.add(_rec(64))
    c.add_retime(["BK=8,BM=64"], {"BK=8,BM=64": [1.0, 1.0]}, 2)
    c.close()
    c = TuneCache.open(tmp_path, KEY)
    assert c.get({"BM": 64, "BK": 8}).status == TIMED
    assert c.find_retime(["BK=8,BM=64"])["rounds"] == 2 and c.find_retime(["x"]) is None
