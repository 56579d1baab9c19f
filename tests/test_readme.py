"""The README's own-kernel example is a working spec: it loads, binds and compiles with nvcc."""

import re
from pathlib import Path

from gemmprof.catalog import spec as specmod
from gemmprof.measure.build import nvcc_build
from gemmprof.model.traffic import GemmShape

README = Path(__file__).resolve().parent.parent / "README.md"


def _example(tmp_path) -> Path:
    text = README.read_text()
    cuda = re.search(r"```cuda\n(.*?)```", text, re.S).group(1)
    yaml_text = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "my_kernel.cu").write_text(cuda)
    path = tmp_path / "my_kernel.yaml"
    path.write_text(yaml_text)
    return path


def test_readme_example_spec_loads_and_binds(tmp_path):
    k = specmod.bind(specmod.load_spec(_example(tmp_path)))
    assert k.name_expression == "my_sgemm<16>"
    assert k.launch_config(GemmShape(100, 70, 5)) == ((5, 7, 1), (16, 16, 1), 0)


def test_readme_example_compiles(tmp_path, nvcc):
    k = specmod.bind(specmod.load_spec(_example(tmp_path)))
    result = nvcc_build(k, "sm_80", nvcc)
    assert result.ok, result.log
