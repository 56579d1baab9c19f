"""A shape sweep drawn: % of the baseline by layer and token count (a model's shapes: one panel per variant, a line
per layer against the tokens), or by shape (a list of shapes: a line per variant). matplotlib is imported inside the
function, on the Agg canvas (no pyplot state)."""

from __future__ import annotations

from pathlib import Path

from gemmprof.render.sweep_tables import baseline_words
from gemmprof.results.files import write_with
from gemmprof.results.sweep import BEST, SweepSummary

MAX_PANELS = 6  # the best variant and up to five others, highlighted ones first


def plot_sweep(sweep: SweepSummary, path, dpi: int = 120) -> Path:
    fig = figure(sweep)
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".") or "png"
    write_with(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi))
    return path


def figure(sweep: SweepSummary):
    """The sweep's matplotlib Figure (on an Agg canvas), laid out."""
    import textwrap

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = [*[v for v in sweep.highlight if v in sweep.variants],
             *[v for v in sweep.variants if v not in sweep.highlight]]
    names = ([BEST] if len(names) > 1 else []) + names[:MAX_PANELS - 1]  # the best of one variant is that variant
    layered = bool(sweep.layers)
    panels = len(names) if layered else 1
    cols = min(3, panels)
    rows = -(-panels // cols)
    fig = Figure(figsize=(4.6 * cols, 3.4 * rows) if layered else (max(7.0, 0.42 * len(sweep.shapes) + 3), 4.4))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(panels)]
    if layered:
        for ax, name in zip(axes, names, strict=True):
            _by_layer(ax, sweep, name)
    else:
        _by_shape(axes[0], sweep, names)
    title = (f"gemmprof sweep ({sweep.dtype}{', ' + sweep.model if sweep.model else ''}): % of "
             f"{baseline_words(sweep)} on {sweep.device or '?'}")
    # about 11 characters of 10-point text to the inch: a title wider than the figure is wrapped, not cut off
    fig.suptitle("\n".join(textwrap.wrap(title, int(fig.get_figwidth() * 11))), fontsize=10)
    fig.tight_layout()
    return fig


def _pct(sweep: SweepSummary, name: str, shape) -> float | None:
    return sweep.best_at(shape)[1] if name == BEST else sweep.pct(name, shape)


def _by_layer(ax, sweep: SweepSummary, name: str) -> None:
    layers = list(dict.fromkeys(sweep.layers))
    for layer in layers:
        points = sorted((s.M, _pct(sweep, name, s)) for s, lab in zip(sweep.shapes, sweep.layers, strict=True)
                        if lab == layer)
        xs = [t for t, p in points if p is not None]
        ax.plot(xs, [p for _, p in points if p is not None], marker="o", markersize=3.5, linewidth=1.2, label=layer)
    ax.axhline(100, color="0.4", linestyle="--", linewidth=0.8)
    ax.set_xscale("log", base=2)
    tokens = sorted({s.M for s in sweep.shapes})
    ax.set_xticks(tokens, [str(t) for t in tokens], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("tokens (M)")
    ax.set_ylabel("% of baseline")
    ax.set_title(name, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _by_shape(ax, sweep: SweepSummary, names: list[str]) -> None:
    xs = range(len(sweep.shapes))
    for name in names:
        ys = [_pct(sweep, name, s) for s in sweep.shapes]
        ax.plot([x for x, y in zip(xs, ys, strict=True) if y is not None], [y for y in ys if y is not None],
                marker="o", markersize=3.5, linewidth=1.0 if name != BEST else 2.0, label=name)
    ax.axhline(100, color="0.4", linestyle="--", linewidth=0.8)
    ax.set_xticks(list(xs), [s.label for s in sweep.shapes], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("% of baseline")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
