"""The README's own-kernel example and docs/kernel-spec.md's complete one are working specs: they load, bind and
compile with nvcc. The README's first screen holds clone, install, the main job and its real output (re-rendered
from the record's file), and the test command is the one CI runs."""

import re
from pathlib import Path

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.measure.build import nvcc_build
from gemmprof.model.traffic import GemmShape

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
KERNEL_SPEC = ROOT / "docs" / "kernel-spec.md"


def _examples(tmp_path) -> list[Path]:
    """Each (cuda, yaml) pair of the README, written where the spec's `file:` names it."""
    readme, spec_doc = README.read_text(), KERNEL_SPEC.read_text().split("\n## A complete example\n", 1)[1]
    cudas = [*re.findall(r"```cuda\n(.*?)```", readme, re.S), *re.findall(r"```cuda\n(.*?)```", spec_doc, re.S)]
    yamls = [*re.findall(r"```yaml\n(.*?)```", readme, re.S), *re.findall(r"```yaml\n(.*?)```", spec_doc, re.S)]
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


# -- the first screen, the sample, the test command -------------------------------------------------------------
SAMPLE_RESULTS = ROOT / "tests" / "fixtures" / "records" / "2026-11-28_h200_true_number" / "main_job_fp32_4096.json.gz"
SAMPLE_RECORD = ROOT / "benchmarks" / "2026-11-28_h200_true_number" / "main_job_fp32_4096.json.gz"
MAIN_JOB = "gemmprof run --all --dtype fp32 --size 4096 --regime burst -o results.json"
TEST_COMMAND = "python3 -m pip install -e '.[test]' && ruff check . && python3 -m pytest -q"


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_the_first_screen_holds_clone_install_the_main_job_and_its_output():
    text = README.read_text()
    before_commands = text[: text.index("\n## Commands")]
    first = "\n".join(before_commands.splitlines()[:62])  # a screen: clone, install, the main job, its output
    shell = "\n".join(_blocks(first, "bash"))
    assert "git clone " in shell and "python3 -m pip install -e '.[cuda12]'" in shell and MAIN_JOB in shell
    assert len(_blocks(first, "text")) == 1  # the sample, whole
    assert TEST_COMMAND in "\n".join(_blocks(before_commands, "bash"))  # and the tests, before the commands


def test_the_sample_is_the_real_output_of_show_on_the_records_file(monkeypatch):
    """The sample is `gemmprof show` of the main job's results at 100 columns, as the README says; the fixture is the
    record's file, byte for byte, where the record is in the tree."""
    from click.testing import CliRunner
    from clitools import invoke

    if SAMPLE_RECORD.exists():
        assert SAMPLE_RECORD.read_bytes() == SAMPLE_RESULTS.read_bytes()
    monkeypatch.setenv("COLUMNS", "100")
    out = invoke(CliRunner(), ["show", str(SAMPLE_RESULTS)]).stdout
    (sample,) = _blocks(README.read_text()[: README.read_text().index("\n## Commands")], "text")
    assert sample == out
    import gemmprof

    run = gemmprof.load(SAMPLE_RESULTS)
    assert run.command.startswith("gemmprof run --all --dtype fp32 --size 4096 --regime burst")
    assert "H200" in run.device["name"] and run.timing_method["regime"] == "burst"


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert TEST_COMMAND in ci.splitlines()


def test_no_workshop_words_where_a_user_reads():
    """README, docs/, the package's help and list text, fixture provenance: no issue numbers or workshop words."""
    pattern = re.compile(r"issue [0-9]|done-when|\blent\b|(?<![\w/`])call ?[0-9]+(?![\w/])|fp32 top\b", re.I)
    files = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "gemmprof").rglob("*.py")),
             *sorted((ROOT / "tests" / "fixtures").rglob("PROVENANCE.md")), *sorted((ROOT / "kernels").rglob("*.yaml")),
             *sorted((ROOT / "examples").rglob("*.md"))]
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}" for p in files
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_every_seed_named_where_a_user_reads_is_described():
    """A seed is named only where the README's "Where the ladder comes from" says what each is, with its link."""
    text = README.read_text()
    section = text[text.index("## Where the ladder comes from"):]
    section = section[: section.index("\n## ", 3)]
    for seed in ("seed 000", "seed 001", "seed 002", "seed 003", "seed 004"):
        assert f"**{seed}**" in section
    assert "https://siboehm.com/articles/22/CUDA-MMM" in section
