"""gemmprof list: the ladder; --explain RUNG: what a rung's memory accesses cost, access by access."""

from __future__ import annotations

import click

from gemmprof.commands._options import output_options, resolve_shape, shape_options
from gemmprof.render.table import Column, Table, emit
from gemmprof.results.stages import with_params


@click.command("list")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default=None,
              help="Only rungs of this dtype (bf16: the rungs whose source also builds for bf16, h4-h13).")
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False), help="Also show these specs.")
@click.option("--explain", "explain_rungs", multiple=True, metavar="RUNG",
              help="Explain these rungs' memory accesses (coalescing, bank conflicts, the documents' claims) "
                   "at --size (default 4096) instead of listing the ladder (repeatable; ids, names, ranges).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="With --explain: override a parameter.")
@shape_options
@output_options
def command(dtype, spec_files, explain_rungs, params, size, m, n, k, fmt, output):
    """Show the kernel ladder: rung, name, technique, source document, dtype, parameters; then the planning
    entries (plan), each with the rules by which it chooses a rung and its parameters from the shape.

    The sources "seed 000" to "seed 004" are the study notes the ladder started from (the note under the table
    says what each is): seed 004 translates Simon Boehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like
    Performance" (rungs 1-12 follow its kernels); a name ending in _seed00N is our implementation of that note's
    kernel, beside the rung it resembles.

    With --explain RUNG, say for each of the rung's described memory accesses (its spec's `accesses:` block) how
    many 32-byte sectors and 128-byte lines one warp request touches and how much of them it uses, how many
    shared-memory wavefronts it needs and how many of those are bank conflicts; and where a document's claim
    differs from that (16 banks where there are 32, kernel 8's padding), what the numbers are.

    \b
    Examples:
      gemmprof list
      gemmprof list --dtype fp16 --format json
      gemmprof list --explain 8
      gemmprof list --explain 1-2 --explain h3 --size 8192
    """
    from gemmprof.catalog import plan
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.plan_rules import rules_text

    if explain_rungs:
        _explain(explain_rungs, params, resolve_shape(size, m, n, k), fmt, output)
        return
    specs = [s for s in (*specmod.ladder(), *plan.entries()) if dtype is None or dtype == s.dtype or dtype in s.dtypes]
    specs += [s for s in specmod.load_user_specs(spec_files) if s not in specs]
    for s in specs:
        if s.plan:
            plan.check_plan(s, specmod.ladder())
    rows = [{"id": s.id, "name": s.name, "title": s.title, "description": s.description,
             "source": s.source_text(), "dtype": s.dtype,
             "dtypes": ", ".join(s.dtypes or (s.dtype,)), "layout": f"A {s.layout['A']}, B {s.layout['B']}",
             "backend": s.backend if not s.plan else "-", "params": _params(s),
             "file": str(s.file.name), **({"plan": rules_text(s.plan)} if s.plan else {})} for s in specs]
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s"), Column("title", "technique", fmt="s"),
            Column("source", "source", fmt="s"), Column("dtypes", "dtypes", fmt="s"),
            Column("params", "parameters", fmt="s")]
    if fmt in ("json", "csv"):
        cols += [Column("dtype", "dtype", fmt="s"), Column("description", "description", fmt="s"),
                 Column("layout", "layout", fmt="s"), Column("backend", "backend", fmt="s"), Column("file", "file", fmt="s")]
    notes = [SEEDS] + [f"{s.name} ({s.id}) runs the rung of the first rule that holds at the shape and SM count "
                       "(a condition reads its own rung's names at the shape: h8's TILES is h8's tile count): "
                       + "; ".join(rules_text(s.plan)) for s in specs if s.plan]
    emit(Table("The GEMM ladder", cols, rows, notes), fmt, output)


def _params(s) -> str:
    if s.plan:  # a planning entry has no parameters: it names the rungs it chooses among (with a rule's own)
        return "chooses " + ", ".join(dict.fromkeys(with_params(r.rung, r.params) for r in s.plan)) + " by shape"
    return ", ".join(f"{k}={v}" for k, v in s.params.items())


SEEDS = ("Sources: \"seed 000\" to \"seed 004\" are the five study notes the ladder started from (README, \"Where the "
         "ladder comes from\"). Seed 004 translates Simon Boehm's \"How to Optimize a CUDA Matmul Kernel for "
         "cuBLAS-like Performance\" (siboehm.com/articles/22/CUDA-MMM; rungs 1-12 follow its kernels); seeds 000 and "
         "002 walk through an SGEMM series from a naive kernel to register tiles (github.com/ifromeast/cuda_learning); "
         "seed 003 times naive to shared-memory kernels against cuBLAS under Nsight Systems; seed 001 teaches WMMA "
         "and mma.sync (after github.com/KnowingNothing/MatmulTutorial). A name ending in _seed00N (1b, 3b, 3c, 5b, "
         "h1) is our implementation of that note's kernel, beside the rung it resembles; `gemmprof model --flop-convention "
         "seed004|seed003` counts FLOPs the way those notes do. \"Beyond the seeds\": public techniques, in code of "
         "the project's own.")


EXPLAIN_COLUMNS = [Column("rung", "rung", fmt="s"), Column("access", "access", fmt="s"),
                   Column("space", "space", fmt="s"), Column("op", "op", fmt="s"), Column("bytes", "bytes", fmt="d"),
                   Column("requests", "requests", fmt=",d"),
                   Column("sectors_per_request", "sectors/req", fmt=".2f"),
                   Column("lines_per_request", "lines/req", fmt=".2f"),
                   Column("efficiency", "efficiency", fmt=".2f"),
                   Column("wavefronts_per_request", "wavefronts/req", fmt=".2f"),
                   Column("conflicts_per_request", "conflicts/req", fmt=".2f"), Column("degree", "n-way", fmt=".2f"),
                   Column("degree_16_banks", "n-way with 16 banks", fmt=".2f")]


def _explain(rungs, params, shape, fmt, output):
    from gemmprof.catalog.selection import choose
    from gemmprof.model.access_explain import explain
    from gemmprof.render.table import choose_format

    found = [(b, explain(b, shape)) for b in choose(rungs, params=params)]
    missing = [b.spec.id for b, e in found if e is None]
    if choose_format(fmt, output) in ("json", "csv"):
        rows = [{"rung": b.spec.id, **row} for b, e in found if e for row in e.accesses]
        notes = [f"{b.spec.id}: document: {c['claim']} model: {c['finding']}" for b, e in found if e
                 for c in e.claims]
        notes += [f"{r}: no accesses: block in its spec" for r in missing]
        emit(Table(f"Memory accesses at {shape.label}", EXPLAIN_COLUMNS, rows, notes,
                   {"shape": shape.to_dict()}), fmt, output)
        return
    text = "\n\n".join(e.text if e else f"{b.spec.id} {b.spec.name}: no accesses: block in its spec"
                       for b, e in found)
    text = _wrapped(text)
    if output:
        from gemmprof.results.files import write_atomic

        write_atomic(output, text + "\n")
    else:
        click.echo(text)


def _wrapped(text: str) -> str:
    """Each line wrapped at the terminal's width (render.table.text_width), continued under its own indent."""
    from gemmprof.render.table import text_width, wrap_text

    width, out = text_width(), []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip()))
        pieces = wrap_text(line.strip(), max(20, width - len(indent) - 2)) if line.strip() else [""]
        out += [indent + pieces[0]] + [indent + "  " + p for p in pieces[1:]]
    return "\n".join(out)
