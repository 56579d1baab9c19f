"""Issue 30's "also found": output a reader can take in at a glance, and help that says what options mean."""

import json

import pytest
from click.testing import CliRunner
from clitools import invoke


@pytest.fixture
def cli():
    return CliRunner()


def test_gpu_sheet_cites_each_source_once(cli):
    from gemmprof.catalog import gpu_specs

    p = gpu_specs.get_gpu("h100")
    text = invoke(cli, ["gpus", "h100"]).output
    whitepaper = p.citation("sm_count")
    assert whitepaper and p.citation("peak_tflops.fp32") == whitepaper  # several rows share this source
    assert " ".join(text.split()).count(" ".join(whitepaper.split())[:80]) == 1
    assert "│ [1]" in text
    rows = json.loads(invoke(cli, ["gpus", "h100", "--format", "json"]).output)["rows"]
    assert all(r["source"] == p.citation(r["figure"]) for r in rows)  # JSON keeps each row's whole citation


def test_model_accepts_bf16_as_roofline_does(cli):
    res = invoke(cli, ["model", "--dtype", "bf16", "--size", "4096", "--ladder", "--format", "json"])
    assert res.exit_code == 0, res.output
    tables = json.loads(res.output)["tables"]
    assert tables[0]["dtype"] == "bf16"
    names = [r["name"] for r in tables[1]["rows"]]
    assert names == ["wgmma_tma_bf16", "warp_specialized_bf16", "persistent_bf16", "cluster_multicast_bf16",
                     "hopper_split_k_bf16", "pingpong_bf16", "stream_k_tail_bf16",
                     "skinny_swap_ab_bf16", "tma_store_epilogue_bf16", "cluster_split_k_bf16"]
    fp16 = json.loads(invoke(cli, ["model", "--dtype", "fp16", "--size", "4096", "--rung", "h4",
                                   "--format", "json"]).output)["tables"][1]["rows"][0]
    bf16 = tables[1]["rows"][0]
    assert bf16["ai"] == pytest.approx(fp16["ai"])  # same element size, same tiles


@pytest.mark.parametrize("command, options", [("run", ["--alpha", "--max-reps", "--wide", "--columns"]),
                                              ("model", ["--dtype", "--flop-convention"])])
def test_options_have_help(command, options):
    import click

    from gemmprof.cli import cli

    cmd = cli.get_command(click.Context(cli), command)
    helps = {o.opts[-1]: o.help for o in cmd.params if isinstance(o, click.Option)}
    for opt in options:
        assert helps.get(opt), f"{command} {opt} has no help"


def test_list_explains_the_seeds(cli):
    res = invoke(cli, ["list"])
    text = " ".join(res.output.split())
    assert '"seed 000" to "seed 004" are the five study notes' in text and "siboehm.com/articles/22/CUDA-MMM" in text
    assert "_seed00N" in text and "--flop-convention" in text
    assert "our implementation of that note's kernel" in text and "own kernel" not in text
    assert "Simon Boehm" in " ".join(invoke(cli, ["list", "--help"]).output.split())


def test_every_rung_header_credits_the_source_of_its_technique():
    """Each rung's first comment block has a `// Credit:` line naming where its technique comes from: Boehm's article
    for rungs 1-12 (kernel N of it for rung N), the seed document for a _seedNNN rung, a public source or "ours"."""
    import re

    from gemmprof.catalog.spec import ladder

    specs = ladder()
    assert len(specs) >= 30
    for spec in specs:
        header = spec.file.read_text().split("\n\n", 1)[0]
        credit = " ".join(re.findall(r"^// (?:Credit:)?\s*(.*)$", header[header.index("// Credit:"):], re.M)) \
            if "// Credit:" in header else ""
        assert credit, f"{spec.file.name}: no // Credit: line in its header"
        number = re.match(r"(\d+)_", spec.file.name)
        if number and int(number[1]) <= 12:
            assert f"kernel {int(number[1])} of Simon Boehm's" in credit and "siboehm.com/articles/22/CUDA-MMM" in credit
        seed = re.search(r"_seed(\d{3})\.cu$", spec.file.name)
        if seed:
            assert "our implementation of" in credit and f"seed {seed[1]}" in credit, spec.file.name


def test_build_without_a_disassembler_says_so_once(cli, monkeypatch):
    import gemmprof.measure.build as buildmod
    import gemmprof.measure.sass as sassmod
    from gemmprof.results.run import BuildInfo, Resources

    def fake_build_all(kernels, archs, jobs=None, **_):
        return [buildmod.BuildResult(k.variant_name, a, True, Resources(32, 0, 0, 0, 0), "",
                                     BuildInfo("nvcc", "13.0", (), a)) for a in archs for k in kernels]

    import gemmprof.measure.compile_pool as poolmod

    monkeypatch.setattr(poolmod, "nvcc_build_all", fake_build_all)
    monkeypatch.setattr(sassmod, "find_disassembler", lambda: None)
    res = invoke(cli, ["build", "1", "2"])
    assert res.exit_code == 0, res.output
    assert "FFMA" not in res.output and "LDG.128" not in res.output
    assert " ".join(res.output.split()).count("pip install 'gemmprof[sass]'") == 1
    assert "compiling 2 kernels with nvcc on" in res.output  # the phase line (stderr, mixed in by CliRunner)
