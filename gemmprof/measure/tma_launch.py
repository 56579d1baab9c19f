"""Launching Hopper rungs: their CUtensorMap arguments built from the problem's operands, the arch they need,
and thread-block clusters through the driver's extended launch (gemmprof.measure.hopper_host makes the driver calls, through cuda.bindings)."""

from __future__ import annotations

from gemmprof.catalog import expr
from gemmprof.catalog.binding import BoundKernel
from gemmprof.errors import GemmprofError
from gemmprof.model.traffic import GemmShape


def skip_reason(kernel: BoundKernel, compute_capability: str) -> str | None:
    """Why this kernel cannot run on a device of `compute_capability` ("9.0"), or None when it can."""
    targets = kernel.spec.targets
    if not targets:
        return None
    here = "sm_" + compute_capability.replace(".", "")
    if any(t.rstrip("a") == here for t in targets):
        return None
    return (f"built for {', '.join(targets)} only (wgmma/TMA/setmaxnreg are Hopper instructions); this GPU is "
            f"{here}: skipped")


def tiled_maps(kernel: BoundKernel, shape: GemmShape, sms: int | None = None) -> list:
    """(operand, TiledMap or None) per `tma_args` entry at `shape`, each checked (InputError names the problem);
    None where the entry's `when` is false. The boxes may use the spec's `decomposition` names (h8's tile width at
    the shape), which may need `sms`. A and B are of the run's dtype, C of the kernel's C dtype."""
    from gemmprof.measure import hopper_host

    env = {**kernel.env, "M": shape.M, "N": shape.N, "K": shape.K, **({"SMS": sms} if sms else {})}
    used = set().union(*(expr.names(e) for a in kernel.spec.tma_args
                         for e in (a.rows, a.cols, *a.box, a.l2_promotion, *([a.when] if a.when is not None else []))))
    needed = used & set(kernel.spec.decomposition)
    if needed:
        env.update(kernel.decomposition(shape, sms, until=needed))
    out = []
    for arg in kernel.spec.tma_args:
        if arg.when is not None and not expr.evaluate(arg.when, env):
            out.append((arg.operand, None))
            continue
        ev = [int(expr.evaluate(e, env)) for e in (arg.rows, arg.cols, *arg.box, arg.l2_promotion)]
        dtype = kernel.run_c_dtype if arg.operand == "C" else kernel.run_dtype
        tmap = hopper_host.TiledMap(dtype, ev[0], ev[1], ev[2], ev[3], arg.swizzle, ev[4])
        tmap.validate()
        out.append((arg.operand, tmap))
    return out


def encode_maps(tiled: list, operands: dict, encode=None) -> tuple:
    """One 128-byte CUtensorMap per entry of `tiled` (tiled_maps), over the operand as the kernel reads or writes it
    (A: M x K row-major, B column-major: N rows of K, C: M x N row-major); 128 zero bytes where the entry's `when`
    is false. `encode(address, TiledMap)` is hopper_host.encode_tiled (tests pass a fake). A map of C is over that
    C array: encode the maps again for each output."""
    from gemmprof.measure import hopper_host

    encode = encode or hopper_host.encode_tiled
    return tuple(hopper_host.unused_map() if tmap is None else encode(operands[operand].data.ptr, tmap)
                 for operand, tmap in tiled)


def launch_args(kernel: BoundKernel, shape: GemmShape, problem, lds: dict, tiled: list, workspace, out) -> tuple:
    """A launch's arguments into the output array `out` (run's and tune's): the spec's `args:` over the problem's
    operands at their leading dimensions `lds`, then its tensor maps (`tiled`, from tiled_maps), encoded over these
    arrays (a map of C is over `out`: encode once per output)."""
    from gemmprof.catalog.abi import kernel_values
    from gemmprof.measure.problem import scale_buffers

    layout = kernel.spec.layout
    buffers = {"A": problem.operand("A", layout["A"], lds["lda"]), "B": problem.operand("B", layout["B"], lds["ldb"]),
               "C": out, "workspace": workspace, **scale_buffers(problem)}
    maps = encode_maps(tiled, {w: buffers[w] for w in "ABC"})
    return kernel_values(kernel.spec.abi, shape, layout, problem.alpha, problem.beta, buffers, lds) + maps


def launcher(kernel: BoundKernel, func, grid, block, smem: int, shape: GemmShape | None = None,
             sms: int | None = None):
    """bind(args) -> launch(), the arguments of every launch packed once by bind (outside the timed launches): a
    kernel with tensor maps or clusters (the Hopper rungs) through cuLaunchKernelEx (hopper_host.prepare_launch:
    one driver call per launch), the others through CuPy's kernel call. The cluster is the one at `shape`."""
    cluster = kernel.cluster_dims(shape, sms)
    if cluster is None and not kernel.spec.tma_args:
        return lambda args: lambda: func(grid, block, args, shared_mem=smem)
    from gemmprof.measure import hopper_host

    ptr = _function_ptr(func)
    return lambda args: hopper_host.prepare_launch(ptr, grid, block, args, shared_mem=smem, cluster=cluster)


def _function_ptr(func) -> int | None:
    """The CUfunction of a CuPy RawKernel (`.kernel.ptr`) or module function (`.ptr`)."""
    return getattr(getattr(func, "kernel", func), "ptr", None)


def rounds_note(kernel: BoundKernel, func, grid, block, smem: int, shape: GemmShape, sms: int) -> str:
    """For the run's note: a clustered launch whose clusters do not all fit on the device at once (hopper_host.
    rounds_note, the count from the driver's occupancy calculator); empty for unclustered launches, where they fit,
    or where the driver cannot say."""
    cluster = kernel.cluster_dims(shape, sms)
    if cluster is None:
        return ""
    from gemmprof.measure import hopper_host

    ptr = _function_ptr(func)
    if not ptr:  # a stand-in function (tests): no driver to ask
        return ""
    try:
        fit = hopper_host.co_resident_clusters(ptr, grid, block, smem, cluster)
    except GemmprofError:  # the note is advice: the launch itself reports what is wrong with it
        return ""
    return hopper_host.rounds_note(grid, cluster, fit)
