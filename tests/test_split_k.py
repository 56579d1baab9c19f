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


def _rung15_params():
    """Rung 15's defaults, as `--param` overrides of rung 16 (its template parameters are rung 15's)."""
    return dict(_bound("15").params)


@pytest.mark.parametrize(("shape", "tiles", "split"), [
    # 8 x 8 tiles of 128 x 128 fill 64 of 132 SMs: 132 // 64 = 2 slices of 125 // 2 k-tiles, 128 blocks
    (GemmShape(1000, 1000, 1000), 64, 2),
    (GemmShape(2048, 2048, 2048), 256, 1),  # 256 tiles: nearly two waves already, no split
    (GemmShape(4096, 4096, 4096), 1024, 1),
    (GemmShape(8192, 8192, 8192), 4096, 1),
    (GemmShape(4095, 4097, 1023), 32 * 33, 1),  # square tiles: one orientation
    (GemmShape(128, 4096, 4096), 32, 4),  # one row of 32 tiles: 132 // 32 = 4 slices of 128 k-tiles
    (GemmShape(1000, 1000, 24), 64, 1),  # 3 k-tiles: not two slices of SPLIT_MIN_KTILES (2)
    (GemmShape(512, 512, 48), 16, 3),  # 6 k-tiles: 3 slices of 2, where the wave would hold 132 // 16 = 8
    (GemmShape(16, 128, 16384), 1, 16),  # one tile: SPLIT_MAX slices
])
def test_rung16_split_rule_at_the_issue_shapes(shape, tiles, split):
    k = _bound("16")
    grid, block, _ = k.launch_config(shape, sms=H100_SMS)
    assert grid == (tiles, 1, split) and block == (128, 1, 1)
    assert grid[0] * grid[2] <= H100_SMS or split == 1  # a split launch is one wave
    assert k.decomposition_note(shape, H100_SMS) == f"TILES={tiles}, SPLIT_K={split}"


def test_rung16_picks_the_orientation_of_fewer_waves_times_k_tiles():
    """Rung 15's 128 x 256 tiles can turn (the defaults' square ones cannot): at M = 128, N = K = 4096, 16 tiles of
    128 x 256 in 8 slices of 64 k-tiles, not 32 half-empty tiles of 256 x 128 in 4 of 128."""
    k = _bound("16", _rung15_params())
    assert k.env["CAN_SWAP"] and not _bound("16").env["CAN_SWAP"]
    assert k.launch_config(GemmShape(128, 4096, 4096), sms=H100_SMS)[0] == (16, 1, 8)
    assert k.launch_config(GemmShape(4096, 128, 4096), sms=H100_SMS)[0] == (16, 1, 8)  # the same, turned
    # unsplit, rung 15's rule: 528 tiles of 256 x 128 (4 full waves) rather than 544 of 128 x 256 (a 5th of 16)
    assert k.launch_config(GemmShape(4095, 4097, 1023), sms=H100_SMS)[0] == (16 * 33, 1, 1)


@pytest.mark.parametrize("with_rung15_params", [False, True], ids=["defaults", "rung15_params"])
def test_rung16_launches_rung15_wherever_it_does_not_split(with_rung15_params):
    """Unsplit, rung 16 runs rung 15's block: at its own (default) tile the launch of rung 15 given rung 16's
    parameters, and given rung 15's parameters explicitly (--param overrides) rung 15's own launch."""
    k16 = _bound("16", _rung15_params() if with_rung15_params else None)
    k15 = _bound("15", {p: k16.params[p] for p in k16.spec.template})  # rung 15's template is rung 16's
    unsplit = 0
    for m, n, kk in itertools.product([1, 100, 1000, 2000, 4095, 4096, 8192], [1, 300, 4097, 4352, 14336],
                                      [8, 1023, 4096]):
        shape = GemmShape(m, n, kk)
        grid, block, smem = k16.launch_config(shape, sms=H100_SMS)
        if grid[2] == 1:
            unsplit += 1
            assert (grid, block, smem) == k15.launch_config(shape, sms=H100_SMS), shape
        else:  # split: never more than one wave, never a slice below SPLIT_MIN_KTILES k-tiles
            assert grid[0] * grid[2] <= H100_SMS, shape
            assert -(-kk // 8) // grid[2] >= k16.params["SPLIT_MIN_KTILES"], shape
    assert 0 < unsplit < 105


def test_rung16_split_follows_the_wave_size_and_its_parameters():
    shape = GemmShape(1000, 1000, 1000)  # 64 tiles of 128 x 128, 125 k-tiles: 2 slices on 132 SMs
    assert _bound("16").launch_config(shape, sms=66)[0] == (64, 1, 1)  # half the SMs: a wave of 64 tiles, no room
    assert _bound("16").launch_config(shape, sms=264)[0] == (64, 1, 4)  # twice the SMs: twice the slices
    assert _bound("16", {"MINBLOCKS": 2}).launch_config(shape, sms=H100_SMS)[0] == (64, 1, 4)  # 264 // 64
    assert _bound("16", {"MINBLOCKS": 2, "SPLIT_MAX": 3}).launch_config(shape, sms=H100_SMS)[0] == (64, 1, 3)
    assert _bound("16", {"MINBLOCKS": 2, "SPLIT_MIN_KTILES": 40}).launch_config(shape, sms=H100_SMS)[0] == (64, 1, 3)
    assert _bound("16", {"SPLIT_MIN_KTILES": 64}).launch_config(shape, sms=H100_SMS)[0] == (64, 1, 1)
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
    k16 = _bound("16")
    k15 = _bound("15", {p: k16.params[p] for p in k16.spec.template})  # rung 15 at rung 16's tile

    def a_requests(k, shape):
        la = analyse_kernel(k, shape, sms=H100_SMS)
        return next(r for r in la.results if r.access.name.startswith("A copies")).requests_per_launch

    # 1000^3: rung 15 runs 64 blocks x 125 k-tiles, rung 16 64 x 2 blocks x (125 // 2 = 62) for slice 0's share
    small = GemmShape(1000, 1000, 1000)
    assert a_requests(k16, small) / a_requests(k15, small) == pytest.approx(128 * 62 / (64 * 125))
    big = GemmShape(4096, 4096, 4096)
    assert a_requests(k16, big) == a_requests(k15, big)  # unsplit: rung 15's accesses


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
    # `note` lists what the note shows instead (h12: its fitted width, which the grid does not read)
    noted = binding.bind(_user_spec(tmp_path, SPEC + "note: [UNSHOWN, TILES]\n"))
    assert noted.decomposition_note(shape, 10) == "TILES=4, UNSHOWN=4"  # in the decomposition's order
    for bad in ("note: [NOPE]\n", "note: TILES\n", "note: [{TILES: 1}]\n", "note: [[TILES]]\n"):
        with pytest.raises(SpecError, match=r"note: expected a list of decomposition names \(TILES, SPLIT, UNSHOWN\)"):
            _user_spec(tmp_path, SPEC + bad)


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
