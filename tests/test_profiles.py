"""GPU specs (profiles/*.yaml): every shipped file loads, cites its sources, and bad files are named with key and problem."""

from pathlib import Path

import pytest

from gemmprof.catalog import gpu_specs
from gemmprof.catalog.paths import PROFILES_DIR
from gemmprof.errors import GpuSpecError

REQUIRED_GPUS = ["h100", "h100-pcie", "h200", "a100", "4090", "a6000", "v100", "t4", "l4", "a10"]


def test_every_required_gpu_has_a_profile():
    for name in REQUIRED_GPUS:
        assert gpu_specs.get_gpu(name).sm_count > 0, name


def test_every_figure_cites_a_defined_reference():
    for p in gpu_specs.all_gpus():
        assert p.sources, p.path
        for key, ref in p.sources.items():
            assert ref in p.references and p.references[ref].strip(), f"{p.path}: {key}"
        for kind in p.peak_tflops:
            assert f"peak_tflops.{kind}" in p.sources


def test_dense_tensor_rates_are_not_sparse_rates():
    for p in gpu_specs.all_gpus():
        dense = p.peak_tflops.get("fp16_tensor_fp32_acc")
        sparse = p.peak_tflops.get("fp16_tensor_fp32_acc_sparse")
        if dense and sparse:
            assert sparse == pytest.approx(2 * dense, rel=0.02), p.path
        assert p.peak_tflops["fp32"] < (dense or float("inf")), p.path


def test_h100_matches_the_lent_card():
    h = gpu_specs.get_gpu("h100")
    assert "NVIDIA H100 80GB HBM3" in h.cuda_names
    assert h.sm_count == 132 and h.l2_size_mib == 50 and h.compute_capability == "9.0"
    assert h.peak_tflops["fp16_tensor_fp32_acc"] == pytest.approx(989.4, rel=0.01)
    assert h.measured["dram_bandwidth_gbs"] == 2948
    assert gpu_specs.gpu_for_device_name("NVIDIA H100 80GB HBM3").key == h.key


def _write(tmp_path, text) -> Path:
    p = tmp_path / "card.yaml"
    p.write_text(text)
    return p


def _valid_text():
    return (Path(PROFILES_DIR) / "h100_sxm.yaml").read_text()


def test_a_copy_of_a_shipped_profile_loads(tmp_path):
    p = gpu_specs.load_gpu_file(_write(tmp_path, _valid_text()))
    assert p.key == "card" and p.sm_count == 132


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = _write(tmp_path, "name: x\npeak_tflops: [1, 2\n")
    with pytest.raises(GpuSpecError, match=r"card\.yaml: line \d+: malformed YAML"):
        gpu_specs.load_gpu_file(path)


def test_missing_key_is_named(tmp_path):
    text = "\n".join(ln for ln in _valid_text().splitlines() if not ln.startswith("dram_bandwidth_gbs:"))
    with pytest.raises(GpuSpecError, match=r"card\.yaml: dram_bandwidth_gbs: missing"):
        gpu_specs.load_gpu_file(_write(tmp_path, text))
    text = _valid_text().replace("dram_bandwidth_gbs:", "dram_bandwidth_gb:", 1)  # a typo: the key meant is named
    with pytest.raises(GpuSpecError, match=r"card\.yaml: dram_bandwidth_gb: unknown key \(did you mean "
                                           r"dram_bandwidth_gbs\?\)"):
        gpu_specs.load_gpu_file(_write(tmp_path, text))


def test_undefined_source_is_named(tmp_path):
    import yaml

    doc = yaml.safe_load(_valid_text())
    doc["sm_count"]["source"] = "nowhere"
    with pytest.raises(GpuSpecError, match=r"sm_count\.source: 'nowhere' is not defined"):
        gpu_specs.load_gpu_file(_write(tmp_path, yaml.safe_dump(doc)))


def test_figure_without_source_is_rejected(tmp_path):
    import yaml

    doc = yaml.safe_load(_valid_text())
    doc["sm_count"] = 132
    with pytest.raises(GpuSpecError, match=r"sm_count: expected a mapping \{value"):
        gpu_specs.load_gpu_file(_write(tmp_path, yaml.safe_dump(doc)))


def test_negative_figure_is_rejected(tmp_path):
    import yaml

    doc = yaml.safe_load(_valid_text())
    doc["peak_tflops"]["fp32"]["value"] = -1
    with pytest.raises(GpuSpecError, match=r"peak_tflops\.fp32\.value: must be positive"):
        gpu_specs.load_gpu_file(_write(tmp_path, yaml.safe_dump(doc)))


def test_unknown_gpu_lists_known_ones():
    with pytest.raises(GpuSpecError, match=r"unknown GPU 'nope'.*h100_sxm"):
        gpu_specs.get_gpu("nope")


def test_a_required_peak_left_empty_is_named():
    """Found by the fuzz test: `fp32:` with nothing after it was read as a missing figure, then multiplied."""
    text = _valid_text().replace("fp32: {value: 66.9", "fp32_unused: {value: 66.9")
    text = text.replace("peak_tflops:\n", "peak_tflops:\n  fp32:\n", 1)
    with pytest.raises(GpuSpecError, match=r"peak_tflops\.fp32: expected a mapping .*got nothing"):
        gpu_specs.parse_gpu_spec(Path("x.yaml"), text)
