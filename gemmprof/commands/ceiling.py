"""gemmprof ceiling: this GPU's real ceilings (matmul throughput per dtype, DRAM bandwidth), burst and sustained,
measured and stored beside its GPU spec."""

from __future__ import annotations

import click

from gemmprof.commands._options import (
    FiniteFloat,
    WholeNumber,
    gpu_options,
    output_options,
    refuse_overwrite,
    resolve_gpu,
)
from gemmprof.errors import InputError, require_cupy

DTYPE_CHOICES = ("fp32", "tf32", "fp16", "bf16")


@click.command("ceiling")
@click.option("--regime", type=click.Choice(["burst", "sustained", "both"]), default="both", show_default=True,
              help="burst: a few warm-up calls on the card as found (what it achieves at its boost clock); "
                   "sustained: each point launched back to back until NVML's SM clock and power settle, then timed "
                   "(what it holds under load); both: burst first, then sustained.")
@click.option("--dtype", "dtypes", multiple=True, type=click.Choice(DTYPE_CHOICES),
              help="A dtype to measure (repeatable; default all four): fp32 is cuBLAS SGEMM, tf32, fp16 and bf16 "
                   "run on tensor cores with fp32 accumulate.")
@click.option("--shapes", default=None, metavar="N,MxNxK,...",
              help="The GEMM shapes scanned per dtype, the best of them being the ceiling "
                   "(default 4096,8192,8192x8192x4096).")
@click.option("--bandwidth/--no-bandwidth", default=True, show_default=True,
              help="Also measure DRAM bandwidth: a device-to-device copy, bytes read plus bytes written.")
@click.option("--copy-mib", type=WholeNumber(16, 1 << 16), default=1024, show_default=True, metavar="MIB",
              help="Size of each of the copy's two buffers.")
@click.option("--budget", type=FiniteFloat(positive=True, maximum=60), default=1.0, show_default=True,
              metavar="SECONDS", help="Timed seconds per point, at most (sustained: all of them).")
@click.option("--fill", type=click.Choice(["uniform", "uniform01", "randn", "zeros", "ints"]), default="uniform",
              show_default=True,
              help="Values of the timed GEMMs' inputs; they move the power drawn and so the clock held under a "
                   "power cap (zeros draw least).")
@click.option("--l2", type=click.Choice(["flush", "rotate", "warm"]), default="flush", show_default=True,
              help="L2 between timed calls: flushed, rotated through input sets totalling twice its size, or warm.")
@click.option("--cool-down", "cool_down", type=FiniteFloat(minimum=0, maximum=600), default=0.0, show_default=True,
              metavar="SECONDS", help="Idle seconds before each point's warm-up.")
@click.option("--seed", type=WholeNumber(0, 2 ** 32 - 1), default=None, help="Seed for the random inputs.")
@click.option("--no-save", is_flag=True, help="Measure and show, but keep nothing.")
@gpu_options
@output_options
def command(regime, dtypes, shapes, bandwidth, copy_mib, budget, fill, l2, cool_down, seed, no_save, gpu, gpu_file,
            fmt, output):
    """Measure this GPU's real 100% lines: the matmul throughput it achieves (burst) and sustains (sustained) per
    dtype, the best of a small shape scan through cuBLAS, and its DRAM bandwidth; each with the SM clock it held
    and the power it drew (NVML).

    They are stored for this device model (in $GEMMPROF_DATA, else ~/.local/share/gemmprof, under ceilings/),
    replacing earlier ones of the same dtype and regime; `gemmprof gpus` shows them beside the datasheet, and the
    roofline, explain and the report use them as the ceiling a kernel can reach. Progress goes to stderr.

    \b
    Examples:
      gemmprof ceiling                                  # fp32, tf32, fp16, bf16 and DRAM, burst and sustained
      gemmprof ceiling --dtype fp16 --dtype bf16 --regime sustained --shapes 8192
      gemmprof ceiling --no-save -o ceilings.json
    """
    from gemmprof.catalog import ceilings as store
    from gemmprof.measure import runner as runner_mod
    from gemmprof.measure import timing
    from gemmprof.measure.ceiling import DEFAULT_SHAPES, CeilingRequest, measure
    from gemmprof.render.ceiling_table import ceiling_table, scan_table
    from gemmprof.render.table import choose_format, emit_many
    from gemmprof.results.sweep import parse_shapes

    refuse_overwrite({"-o": output}, [gpu_file])
    if gpu_file:  # a GPU spec file is read now: a bad one is one line before anything looks for a GPU
        resolve_gpu(gpu, gpu_file)
    choose_format(fmt, output)  # an unknown extension fails now, not after the GPU work
    scan = parse_shapes(shapes) if shapes is not None else DEFAULT_SHAPES
    if len(scan) > 16:
        raise InputError(f"--shapes: {len(scan)} shapes; a ceiling scans a few (at most 16)")
    request = CeilingRequest(dtypes=tuple(dict.fromkeys(dtypes)) or DTYPE_CHOICES,
                             regimes=("burst", "sustained") if regime == "both" else (regime,), shapes=scan,
                             bandwidth=bandwidth, copy_mib=copy_mib, budget_s=budget, fill=fill, l2=l2,
                             cool_down_s=cool_down, seed=seed)
    require_cupy()
    timing.capture()
    gpu_spec = resolve_gpu(gpu, gpu_file, prefer_current_device=True)
    info = runner_mod.device_info()
    device = str(info.get("name") or "")
    if not device:
        raise InputError("the device has no name to store its ceilings under")
    if not no_save:
        store.load(device)  # a damaged store fails now, in one line, before the GPU work
    saved = []
    if device not in gpu_spec.cuda_names and not (gpu or gpu_file):
        click.echo(f"note: no GPU spec names {device!r}; its figures are checked against, and shown beside, "
                   f"{gpu_spec.name}'s (give --gpu-file FILE.yaml for its own)", err=True)

    def keep(scans):
        found = [s.ceiling for s in scans if s.ceiling is not None]
        if found and not no_save:
            saved.append(store.save(found, device))

    def say(text):
        click.echo(text, err=True)

    say(f"measuring the ceilings of {device}: {request.steps} points, {', '.join(request.regimes)}")
    scans = measure(gpu_spec, request, device, str(info.get("smi_driver") or info.get("driver_version") or ""),
                    say, keep)
    emit_many([ceiling_table(scans, gpu_spec, device), scan_table(scans)], fmt, output)
    if saved:
        say(f"ceilings stored in {saved[-1]}")
    if any(s.failed for s in scans):
        raise SystemExit(1)
