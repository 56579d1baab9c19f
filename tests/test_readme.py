"""The README's own-kernel examples are working specs: the minimal one and the templated one load, bind and compile
with nvcc."""

import re
from pathlib import Path

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.measure.build import nvcc_build
from gemmprof.model.traffic import GemmShape

README = Path(__file__).resolve().parent.parent / "README.md"


def _examples(tmp_path) -> list[Path]:
    """Each (cuda, yaml) pair of the README, written where the spec's `file:` names it."""
    text = README.read_text()
    cudas = re.findall(r"```cuda\n(.*?)```", text, re.S)
    yamls = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert len(cudas) == len(yamls) == 2
    paths = []
    for i, (cuda, yaml_text) in enumerate(zip(cudas, yamls, strict=True)):
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / re.search(r"^file: (\S+)", yaml_text, re.M).group(1)).write_text(cuda)
        paths.append(folder / "spec.yaml")
        paths[-1].write_text(yaml_text)
    return paths


def _example(tmp_path) -> Path:
    return _examples(tmp_path)[1]


def test_readme_minimal_spec_builds_with_non_const_pointers(tmp_path, nvcc):
    k = bind(specmod.load_spec(_examples(tmp_path)[0]))
    assert (k.spec.dtype, k.spec.layout) == ("fp32", {"A": "row", "B": "row", "C": "row"})
    assert k.launch_config(GemmShape(100, 70, 5))[:2] == ((3, 4, 1), (32, 32, 1))
    result = nvcc_build(k, "sm_90", nvcc)
    assert result.ok, result.log


def test_readme_example_spec_loads_and_binds(tmp_path):
    k = bind(specmod.load_spec(_example(tmp_path)))
    assert k.name_expression == "my_sgemm<16>"
    assert k.launch_config(GemmShape(100, 70, 5)) == ((5, 7, 1), (16, 16, 1), 0)


def test_readme_example_compiles(tmp_path, nvcc):
    k = bind(specmod.load_spec(_example(tmp_path)))
    result = nvcc_build(k, "sm_80", nvcc)
    assert result.ok, result.log
