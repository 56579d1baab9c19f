"""Rung 16's split-K rule (the spec's `decomposition`), evaluated without a GPU, and the key itself."""

import itertools
import re

import pytest

from gemmprof.catalog import binding
from gemmprof.catalog import spec as specmod
from gemmprof.errors import SpecError
from gemmprof.model.access_explain import analyse_kernel
from gemmprof.model.traffic import GemmShape

H100_SMS = 132


def _bound(rid, params=None):
    return binding.bind(next(s for s in specmod.ladder() if s.id == rid), params)


@pytest.mark.parametrize(("shape", "tiles", "split"), [
    # 8 x 4 tiles of 128 x 256 fill 32 of 132 SMs: 132 // 32 = 4 slices of 125 // 4 k-tiles, 128 blocks
    (GemmShape(1000, 1000, 1000), 32, 4),
    (GemmShape(4096, 4096, 4096), 512, 1),  # 3.9 waves of tiles: no split, rung 15's launch
    (GemmShape(8192, 8192, 8192), 2048, 1),
    (GemmShape(2048, 2048, 2048), 128, 1),  # 128 tiles: a 2nd slice each would start a second wave
    (GemmShape(4095, 4097, 1023), 16 * 33, 1),  # rung 15's orientation: 528 tiles of 256 x 128
    (GemmShape(128, 4096, 4096), 16, 8),  # 16 tiles of 128 x 256 in 8 slices, not 32 half-empty 256 x 128 in 4
    (GemmShape(1000, 1000, 24), 32, 1),  # 3 k-tiles: fewer than SPLIT_MIN_KTILES (4) per slice
    (GemmShape(1000, 1000, 64), 32, 2),  # 8 k-tiles: 2 slices of 4
    (GemmShape(16, 256, 16384), 1, 16),  # one tile: SPLIT_MAX slices
])
def test_rung16_split_rule_at_the_issue_shapes(shape, tiles, split):
    k = _bound("16")
    grid, block, _ = k.launch_config(shape, sms=H100_SMS)
    assert grid == (tiles, 1, split) and block == (256, 1, 1)
    assert grid[0] * grid[2] <= H100_SMS or split == 1  # a split launch is one wave
    assert k.decomposition_note(shape, H100_SMS) == f"TILES={tiles}, SPLIT_K={split}"


def test_rung16_launches_rung15_wherever_it_does_not_split():
    k16, k15 = _bound("16"), _bound("15")
    unsplit = 0
    for m, n, kk in itertools.product([1, 100, 1000, 2000, 4095, 4096, 8192], [1, 300, 4097, 4352, 14336],
                                      [8, 1023, 4096]):
        shape = GemmShape(m, n, kk)
        grid, block, smem = k16.launch_config(shape, sms=H100_SMS)
        if grid[2] == 1:
            unsplit += 1
            assert (grid, block, smem) == k15.launch_config(shape, sms=H100_SMS), shape
        else:  # split: never more than one wave, never a slice below SPLIT_MIN_KTILES k-tiles
            assert grid[0] * grid[2] <= H100_SMS and -(-kk // 8) // grid[2] >= 4, shape
    assert 0 < unsplit < 105


def test_rung16_split_follows_the_wave_size_and_its_parameters():
    shape = GemmShape(1000, 1000, 1000)
    assert _bound("16").launch_config(shape, sms=66)[0] == (32, 1, 2)  # half the SMs: half the slices
    assert _bound("16", {"SPLIT_MAX": 2}).launch_config(shape, sms=H100_SMS)[0] == (32, 1, 2)
    assert _bound("16", {"SPLIT_MIN_KTILES": 64}).launch_config(shape, sms=H100_SMS)[0] == (32, 1, 1)
    small = {"BM": 128, "BN": 128, "THREADS": 128, "MINBLOCKS": 2}  # 64 tiles, two blocks per SM: 264 // 64 = 4
    assert _bound("16", small).launch_config(shape, sms=H100_SMS)[0] == (64, 1, 4)
    with pytest.raises(SpecError, match="SPLIT_MAX .* at least 1"):
        _bound("16", {"SPLIT_MAX": 0})


def test_rung16_flag_count_matches_its_kernel():
    k = _bound("16")
    source = k.spec.file.read_text()
    assert f"SPLIT_FLAGS = {k.env['SPLIT_FLAGS']};" in source
    assert '#include "15_interleaved_copies_any_shape.cu"' in source  # rung 15's block, not a copy
    # a launch of more tiles than flags never splits, however few SMs it has
    big = _bound("16", {"BM": 32, "BN": 32, "MI": 1, "NI": 2, "WTY": 8, "THREADS": 32})  # 16384 tiles at 4096
    grid, _, _ = big.launch_config(GemmShape(4096, 4096, 4096), sms=100_000)
    assert grid[0] > k.env["SPLIT_FLAGS"] and grid[2] == 1


def test_rung16_access_model_counts_one_slice_of_k_per_block():
    def a_requests(rid, shape):
        la = analyse_kernel(_bound(rid), shape, sms=H100_SMS)
        return next(r for r in la.results if r.access.name.startswith("A copies")).requests_per_launch

    # 1000^3: rung 15 runs 32 blocks x 125 k-tiles, rung 16 32 x 4 blocks x (125 // 4 = 31) for slice 0's share
    small = GemmShape(1000, 1000, 1000)
    assert a_requests("16", small) / a_requests("15", small) == pytest.approx(128 * 31 / (32 * 125))
    big = GemmShape(4096, 4096, 4096)
    assert a_requests("16", big) == a_requests("15", big)  # unsplit: rung 15's accesses


SPEC = """file: k.cu
entry: k
params: {BM: 64}
decomposition:
  TILES: cdiv(M, BM) * cdiv(N, BM)
  SPLIT: max(1, SMS // TILES)
  UNSHOWN: SPLIT * 2
grid: [TILES, 1, SPLIT]
block: [128]
"""


def _user_spec(tmp_path, text):
    (tmp_path / "k.cu").write_text("// kernel\n")
    (tmp_path / "k.yaml").write_text(text)
    return specmod.load_spec(tmp_path / "k.yaml")


def test_decomposition_names_reach_the_grid_and_the_note(tmp_path):
    k = binding.bind(_user_spec(tmp_path, SPEC))
    shape = GemmShape(128, 128, 64)
    assert k.decomposition(shape, 10) == {"TILES": 4, "SPLIT": 2, "UNSHOWN": 4}
    assert k.launch_config(shape, sms=10)[0] == (4, 1, 2)
    assert k.decomposition_note(shape, 10) == "TILES=4, SPLIT=2"  # only what the grid uses
    plain = _bound("15")
    assert plain.decomposition(shape, 10) == {} and plain.decomposition_note(shape, 10) == ""


@pytest.mark.parametrize(("edit", "match"), [
    (("SPLIT: max(1, SMS // TILES)", "SPLIT: max(1, SMS //)"), r"decomposition\.SPLIT: cannot parse"),
    (("decomposition:\n  TILES: cdiv(M, BM) * cdiv(N, BM)\n  SPLIT: max(1, SMS // TILES)\n  UNSHOWN: SPLIT * 2\n",
      "decomposition: [TILES]\n"), "decomposition: expected a mapping"),
    (("  UNSHOWN:", "  2x:"), "decomposition: '2x' is not a name"),
])
def test_malformed_decomposition_names_file_and_key(tmp_path, edit, match):
    with pytest.raises(SpecError, match=match):
        _user_spec(tmp_path, SPEC.replace(*edit))


def test_decomposition_errors_name_the_key_at_launch(tmp_path):
    k = binding.bind(_user_spec(tmp_path, SPEC))
    with pytest.raises(SpecError, match=re.escape("decomposition.SPLIT: ") + ".*SMS"):
        k.launch_config(GemmShape(64, 64, 64))  # no SM count
