"""A sweep at a glance: TFLOP/s against each tuned parameter, one panel per parameter (matplotlib, lazily)."""

from __future__ import annotations

import random
from pathlib import Path

from gemmprof.errors import InputError


def plot_sweep(result, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = result.timed
    if not timed:
        raise InputError("tune plot: no configuration was timed, nothing to plot")
    axes_names = list(result.axes)
    cols = min(3, len(axes_names))
    rows = -(-len(axes_names) // cols)
    fig, axs = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    winner = result.winner_params
    jitter = random.Random(0)
    for ax, name in zip(axs.flat, axes_names, strict=False):
        values = list(result.axes[name])
        pos = {v: i for i, v in enumerate(values)}
        xs = [pos[c.params[name]] + jitter.uniform(-0.15, 0.15) for c in timed]
        ax.scatter(xs, [c.tflops for c in timed], s=12, alpha=0.6, color="tab:blue", label="timed")
        if winner is not None:
            best = next((c for c in timed if c.params == winner), None)
            if best is not None:
                ax.scatter([pos[best.params[name]]], [best.tflops], s=60, marker="*", color="tab:red",
                           label="winner")
        ax.set_xticks(range(len(values)), [str(v) for v in values])
        ax.set_xlabel(name)
        ax.set_ylabel("TFLOP/s")
        ax.grid(alpha=0.3)
    for ax in list(axs.flat)[len(axes_names):]:
        ax.set_visible(False)
    shape = f"{result.shape['M']}x{result.shape['N']}x{result.shape['K']}"
    fig.suptitle(f"gemmprof tune: {result.kernel} at {shape} on {result.device} ({len(timed)} timed)")
    fig.tight_layout()
    from gemmprof.results.files import write_with

    path = Path(path)
    fmt = {".png": "png", ".svg": "svg", ".pdf": "pdf"}.get(path.suffix.lower())
    if fmt is None:
        plt.close(fig)
        raise InputError(f"--plot {path}: cannot draw a {path.suffix or 'extension-less'} image (use .png, .svg or .pdf)")
    try:
        write_with(path, lambda fh: fig.savefig(fh, format=fmt, dpi=120))  # a regular file, written whole
    finally:
        plt.close(fig)
    return path
