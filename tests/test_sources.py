"""A kernel's source is its file and the headers it includes by a quoted path: both caches see a header change."""

import hashlib
import re
import shutil
from pathlib import Path

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.catalog.sources import included_headers, source_hash, source_text
from gemmprof.measure import nvcc

ROOT = Path(__file__).resolve().parents[1]
HOPPER = ("h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11")


def test_the_hopper_rungs_share_one_header_and_define_no_helper_of_it():
    header = ROOT / "kernels" / "fp16" / "hopper.cuh"
    for rung in HOPPER:
        spec = specmod.select([rung])[0]
        assert included_headers(spec.file) == [header.resolve()]
        text = spec.file.read_text()
        for helper in ("mbar_wait", "tma_load_2d", "sw128_desc", "store_acc", "tile_coords", "tma_load_2d_multicast",
                       "mbar_arrive_cluster", "cluster_sync_relaxed", "barriers_set_up", "producer_tail", "cluster_tile_coords", "load_acquire_gpu",
                       "store_release_gpu", "consumers_sync", "split_k_wait_turn", "split_k_pass_turn"):
            # a definition (`__device__ ... helper(`), not a call such as h7's cta_tile calling tile_coords
            assert not re.search(rf"__device__[^;{{}}]*\b{helper}\(", text), f"{rung} defines {helper} again"


def _copy_of_h4(tmp_path) -> Path:
    folder = tmp_path / "fp16"
    folder.mkdir()
    for name in ("h4_wgmma_tma.cu", "h4_wgmma_tma.yaml", "hopper.cuh"):
        shutil.copy(ROOT / "kernels" / "fp16" / name, folder / name)
    return folder


def test_editing_the_header_changes_the_tune_hash_and_the_cubin_cache_key(tmp_path):
    folder = _copy_of_h4(tmp_path)
    spec = specmod.load_spec(folder / "h4_wgmma_tma.yaml")
    before_hash, before_text = source_hash(spec), source_text(spec.file)
    assert "// hopper.cuh" in before_text  # the nvcc cache key reads the header's text
    with open(folder / "hopper.cuh", "a") as f:
        f.write("\n// edited\n")
    assert source_hash(spec) != before_hash
    assert source_text(spec.file) != before_text
    assert nvcc.source_text is source_text  # the cubin cache key is built from this very function


def test_a_file_without_quoted_includes_keeps_the_hash_it_had():
    """Tune caches and kept tuned defaults made before headers counted stay current for such rungs."""
    spec = specmod.select(["10"])[0]
    assert included_headers(spec.file) == []
    h = hashlib.sha256(spec.file.read_bytes())
    h.update(repr((spec.entry, spec.backend, spec.template, spec.defines, spec.compile_options)).encode())
    assert source_hash(spec) == h.hexdigest()[:16]


def test_the_nvcc_flags_find_the_header_beside_the_rung():
    kernel = bind(specmod.select(["h5"])[0], dtype="bf16")
    flags = nvcc.flags_for(kernel, "sm_90a")
    assert f"-I{kernel.spec.file.parent}" in flags and "-DELEM_BF16=1" in flags
