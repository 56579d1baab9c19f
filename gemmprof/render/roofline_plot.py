"""Draw a RooflineData with matplotlib: a Figure built directly on the Agg canvas (no pyplot state).

matplotlib is imported inside the functions, so importing this module (for image_format) costs nothing.
Labels are placed greedily in display space (roofline_labels.py): each tries a list of positions and takes the
first that overlaps no marker, label or leader line already placed (roof lines count less), else the least bad
one; a crowd of markers gets its labels in one column beside it, in the markers' order.
"""

from __future__ import annotations

import math
from pathlib import Path

from gemmprof.errors import InputError
from gemmprof.model.roofline import RooflineData
from gemmprof.render.roofline_labels import Placer, crowds, point_candidates, ridge_candidates
from gemmprof.results.files import write_with

IMAGE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
COMPUTE_COLOURS = {"fp32": "#1f5fa8", "tf32_tensor": "#2a8c3a", "fp16_tensor_fp32_acc": "#c0392b",
                   "fp16_tensor_fp16_acc": "#e67e22", "bf16_tensor_fp32_acc": "#8e44ad", "fp64": "#7f8c8d",
                   "fp8_tensor_fp32_acc": "#d4a017"}
MEMORY_COLOURS = {"dram": "#3a3a3a", "l2": "#8c564b", "smem": "#6c5ce7"}
BASELINE_MARKERS = {"fp32": "*", "tf32": "P", "fp16": "X", "bf16": "h"}  # cuBLAS by dtype
MARKER_SIZE = 7.0
KEY = {"model": "filled: traffic-model intensity (no cache hits)", "min": "minimum-traffic intensity (cuBLAS)",
       "l2": "half-filled: L2 intensity measured by ncu", "dram": "hollow: DRAM intensity measured by ncu"}
ESTIMATE_KEY = "model estimate (hollow): on the roof at the\ntraffic-model intensity (no cache hits)"


def image_format(path) -> str:
    """png, svg or pdf from the file's extension; an InputError for anything else."""
    ext = Path(path).suffix.lower()
    if ext not in IMAGE_FORMATS:
        raise InputError(f"-o {path}: cannot draw a {ext or 'extension-less'} image (use .png, .svg or .pdf; "
                         "--table FILE writes the table)")
    return IMAGE_FORMATS[ext]


def render(data: RooflineData, path, dpi: int = 150):
    fig = figure(data, dpi)
    save(fig, path, dpi)
    return fig


def save(fig, path, dpi: int = 150) -> None:
    fmt = image_format(path)
    write_with(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi, bbox_inches="tight", pad_inches=0.15))


def figure(data: RooflineData, dpi: int = 150):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    entries = len(data.rungs) + len(families(data)) + 1 + 8  # rungs, family headings, cuBLAS's, the key
    fig = Figure(figsize=(12, max(6.6, 0.19 * entries + 1.0)), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.065, 0.085, 0.64, 0.85))
    ax.set_xscale("log")
    ax.set_yscale("log")
    (x0, x1), (y0, y1) = _limits(data)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    _style(ax)
    ax.set_title(data.title, fontsize=10.5, loc="left")
    colours = _colours(data)
    placer = Placer(fig, ax)
    roofs = _roofs(ax, data, x0, x1, placer)
    marks = _points(ax, data, colours, placer)
    _legend(ax, data, colours)
    for item in roofs:
        placer.place(*item)
    crowded, rest = crowds(ax, marks, 8.0, placer.renderer)
    for crowd in crowded:
        placer.place_column(crowd, 8.0)
    for xy, text, colour, size in rest:
        placer.place(text, point_candidates(xy, size), colour, 8.0, f"label:{text}", arrow=True)
    return fig


def _limits(data: RooflineData):
    xs = [p.intensity for r in data.rungs for p in r.points] + [r.intensity for r in data.ridges]
    ys = [p.flops_per_s for r in data.rungs for p in r.points]
    top = max(c.value for c in data.ceilings if c.kind == "compute")
    x0 = 10 ** math.floor(math.log10(min(xs) / 1.5))
    x1 = 10 ** math.ceil(math.log10(max(xs + [r.intensity * 10 for r in data.ridges]) * 1.5))
    y0 = 10 ** math.floor(math.log10(min(ys + [top]) / 1.5))
    return (x0, max(x1, x0 * 1e3)), (y0, top * 3)


def _style(ax):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e12:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.grid(True, which="major", color="#dddddd", lw=0.6)
    ax.grid(True, which="minor", color="#f2f2f2", lw=0.4)
    ax.set_axisbelow(True)


def _colour_of(ceiling) -> str:
    table = COMPUTE_COLOURS if ceiling.kind == "compute" else MEMORY_COLOURS
    return table.get(ceiling.key, "#555555")


def _roofs(ax, data: RooflineData, x0: float, x1: float, placer) -> list:
    """Draw every ceiling and ridge; return the roof labels to place (compute ones first)."""
    (y0, y1), labels = ax.get_ylim(), []
    for c in sorted(data.ceilings, key=lambda c: (c.kind != "compute", c.source != "datasheet")):
        ridges = [r.intensity for r in data.ridges if c in (r.compute, r.memory)]
        if c.kind == "compute":
            xs, ys = [min(ridges, default=x0), x1], [c.value, c.value]
        else:
            end = max(ridges, default=x1)
            xs, ys = [x0, end], [x0 * c.value, end * c.value]
        measured = c.source == "measured"
        style = {"measured": (1.1, "--"), "held": (1.3, "-.")}.get(c.source, (1.8, "-"))
        (line,) = ax.plot(xs, ys, color=_colour_of(c), lw=style[0], ls=style[1],
                          gid=f"roof:{c.kind}:{c.key}:{c.source}", zorder=2, alpha=0.9)
        placer.add_line(line)
        # dashes and colour say which roof a measured value belongs to; shorter texts are tried when crowded
        number = c.value_text.split()[0]
        if measured:
            word = f"measured ({c.regime})" if c.regime else "measured"  # this GPU's, by `gemmprof ceiling`
            texts = [f"{word} {c.value_text}"] + ([f"{word} {number}", number] if c.kind == "compute" else
                                                   [c.value_text])
        elif c.source == "held":
            texts = [f"at {c.clock_mhz:.0f} MHz held {c.value_text}", f"{c.clock_mhz:.0f} MHz {number}", number]
        else:
            texts = [c.label, f"{c.name} {number}"] if c.kind == "compute" else [c.label]
        labels.append((texts, _roof_candidates(ax, c, xs, (y0, y1)),
                       _colour_of(c), 8.0, f"roof-label:{c.key}:{c.source}"))
    for r in data.ridges:
        colour = COMPUTE_COLOURS.get(r.compute.key, "#555555")
        ax.plot([r.intensity], [r.compute.value], marker="D", ms=5, mfc="white", mec=colour, ls="none", zorder=5,
                gid=f"ridge:{r.compute.key}:{r.compute.source}:{r.memory.key}")
        placer.add_marker((r.intensity, r.compute.value), 5)
        if r.memory.key == "dram" and r.compute.source == "datasheet" and r.memory.source == "datasheet":
            (line,) = ax.plot([r.intensity] * 2, [y0, r.compute.value], color=colour, lw=0.6, ls=":", zorder=1)
            placer.add_line(line, 0.3)
            labels.append((f"ridge {r.intensity:.3g} FLOP/B", ridge_candidates((r.intensity, y0)), colour,
                           7.0, f"ridge-label:{r.compute.key}"))
    return labels


def _roof_candidates(ax, c, xs, ylim) -> list:
    """Along a horizontal roof (right end first), or along a memory roof, rotated to its slope on screen."""
    below = c.source in ("measured", "held")
    if c.kind == "compute":
        out = []
        for dy, va in ((-2, "top"), (2, "bottom"))[::1 if below else -1]:
            out += [((xs[1], c.value), -5, dy, "right", va, 0), ((xs[0], c.value), 8, dy, "left", va, 0)]
            out += [((xs[0] * (xs[1] / xs[0]) ** t, c.value), 0, dy, "center", va, 0)
                    for t in (0.5, 0.3, 0.7, 0.15, 0.85, 0.4, 0.6)]
        return out
    lo, hi = max(xs[0], ylim[0] / c.value), min(xs[1], ylim[1] / c.value)
    (ax0, ay0), (ax1, ay1) = ax.transData.transform([(lo, lo * c.value), (hi, hi * c.value)])
    angle = math.degrees(math.atan2(ay1 - ay0, ax1 - ax0))
    nx, ny = -math.sin(math.radians(angle)), math.cos(math.radians(angle))
    side = -3 if below else 3
    out = []
    for t in (0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.04):
        x = lo * (hi / lo) ** t
        out.append(((x, x * c.value), nx * side, ny * side, "left", "top" if below else "bottom", angle))
    return out


# The ladder's families: a reader tells ~30 rungs apart by colour (the family) and marker (the rung within it).
FAMILIES = (
    ("naive and coalescing", ("1", "1b", "2")), ("shared-memory tiles", ("3", "3b", "3c")),
    ("register tiles", ("4", "5", "5b", "6")), ("bank conflicts", ("7", "8")), ("tuned and warp tiles", ("9", "10")),
    ("pipelined copies", ("11", "12", "13", "14", "15")), ("split-K", ("16",)),
    ("WMMA and mma.sync", ("h1", "h2", "h3")), ("wgmma and TMA", ("h4", "h5", "h6")),
    ("clusters", ("h7", "h12", "h13")), ("split-K and skinny", ("h8", "h11")), ("schedules", ("h9", "h10")),
)
OTHER_FAMILY = "other kernels"
FAMILY_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#17becf",
                  "#1f3a93", "#8c564b", "#bcbd22", "#111111", "#d62728", "#2ca02c", "#ff7f0e", "#7f7f7f")
RUNG_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p")
FILL = {"model": "full", "l2": "bottom", "dram": "none", "min": "full"}  # the point's level, by its fill


def family_of(rung) -> str:
    return next((title for title, ids in FAMILIES if rung.id in ids), OTHER_FAMILY)


def families(data: RooflineData) -> list[tuple[str, list]]:
    """(heading, rungs) in ladder order: a family per dtype where the data holds several dtypes."""
    several = len(data.dtypes) > 1
    out: dict[str, list] = {}
    order = {title: i for i, (title, _) in enumerate(FAMILIES)}
    ranked = sorted((r for r in data.rungs if r.kind != "baseline"),
                    key=lambda r: (data.dtypes.index(r.dtype) if r.dtype in data.dtypes else 99,
                                   order.get(family_of(r), len(order))))
    for r in ranked:
        out.setdefault(f"{r.dtype}: {family_of(r)}" if several else family_of(r), []).append(r)
    return list(out.items())


def _styles(data: RooflineData) -> dict:
    """name -> (colour, marker): a colour per family, a marker per rung within it, so that no two rungs look the
    same; cuBLAS: the colour of its own compute roof and a marker per routine."""
    out = {}
    for i, (_, rungs) in enumerate(families(data)):
        for j, r in enumerate(rungs):
            out[r.name] = (FAMILY_COLOURS[i % len(FAMILY_COLOURS)], RUNG_MARKERS[j % len(RUNG_MARKERS)])
    for r in data.rungs:
        if r.kind == "baseline":
            out[r.name] = (COMPUTE_COLOURS.get(r.peak_kind, "#111111"), BASELINE_MARKERS.get(r.dtype, "*"))
        out.setdefault(r.name, ("#111111", "o"))
    return out


def _colours(data: RooflineData) -> dict:
    return {name: colour for name, (colour, _) in _styles(data).items()}


def _marker(rung, styles: dict) -> str:
    return styles[rung.name][1]


def _points(ax, data: RooflineData, colours: dict, placer) -> list:
    """Markers (the rung's; filled at the model's intensity, half-filled at ncu's L2, hollow at ncu's DRAM and for
    model estimates), each rung's points joined; returns labels, coincident ones merged."""
    groups: list[dict] = []
    styles = _styles(data)
    for r in data.rungs:
        colour = colours[r.name]
        pts = sorted(r.points, key=lambda p: p.intensity)
        if len(pts) > 1:
            ax.plot([p.intensity for p in pts], [p.flops_per_s for p in pts], color=colour, lw=0.9, alpha=0.75,
                    gid=f"join:{r.name}", zorder=3)
        for p in r.points:
            size = MARKER_SIZE * (1.6 if p.level == "min" else 1.0)
            hollow = data.estimate or FILL.get(p.level) == "none"
            ax.plot([p.intensity], [p.flops_per_s], marker=_marker(r, styles), ms=size, ls="none", mec=colour,
                    mfc="white" if hollow else colour, mfcalt="white", mew=1.4, zorder=4,
                    fillstyle="full" if hollow else FILL.get(p.level, "full"), gid=f"point:{r.name}:{p.level}")
            placer.add_marker((p.intensity, p.flops_per_s), size)
        xy = (r.main.intensity, r.main.flops_per_s)
        disp, size = ax.transData.transform(xy), MARKER_SIZE * (1.6 if r.main.level == "min" else 1.0)
        g = next((g for g in groups if math.dist(g["disp"], disp) < 4), None)
        if g is None:
            groups.append({"xy": xy, "disp": disp, "names": [r.short], "colour": colour, "size": size})
        else:
            g["names"].append(r.short)
            g["size"] = max(g["size"], size)
    return [(g["xy"], ", ".join(g["names"]), _ink(g["colour"]) if len(g["names"]) == 1 else "#222222", g["size"])
            for g in groups]


def _ink(colour):
    """A label's colour: its marker's, darkened enough to read on white (tab20's light shades are not)."""
    from matplotlib.colors import to_rgb

    return tuple(0.72 * c for c in to_rgb(colour))


def _legend(ax, data: RooflineData, colours: dict):
    from matplotlib.lines import Line2D

    fill = (lambda c: "white") if data.estimate else (lambda c: c)
    styles = _styles(data)
    rung_handles = []
    groups = families(data) + [("cuBLAS", [r for r in data.rungs if r.kind == "baseline"])]
    groups = [(title, rungs) for title, rungs in groups if rungs]
    for title, rungs in groups:  # a heading per family (a handle with no marker)
        rung_handles.append(Line2D([], [], ls="none", label=title))
        rung_handles += [Line2D([], [], marker=_marker(r, styles), ls="none", mec=colours[r.name],
                                mfc=fill(colours[r.name]), ms=8 if r.kind == "baseline" else 6,
                                label=r.short if r.kind == "baseline" else f"{r.id}  {r.name}") for r in rungs]
    fig, box = ax.figure, ax.get_position()
    legend = fig.legend(handles=rung_handles, loc="upper left", bbox_to_anchor=(box.x1 + 0.01, box.y1),
                        borderaxespad=0, fontsize=7.5, title="rung (colour: family; marker: rung)",
                        title_fontsize=8, frameon=False, alignment="left")
    for text, handle in zip(legend.get_texts(), rung_handles, strict=True):
        if handle.get_marker() in (None, "None", ""):
            text.set_fontweight("bold")
    levels = {p.level for r in data.rungs for p in r.points}
    names = {**KEY, "model": ESTIMATE_KEY} if data.estimate else KEY
    key = [Line2D([], [], marker="*" if lv == "min" else "o", ls="none", color="#555555",
                  mfc="white" if data.estimate or FILL[lv] == "none" else "#555555", mfcalt="white",
                  fillstyle="full" if data.estimate or FILL[lv] == "none" else FILL[lv],
                  ms=8 if lv == "min" else 6, label=names[lv]) for lv in KEY if lv in levels]
    key.append(Line2D([], [], color="#555555", lw=1.8, label="datasheet ceiling"))
    if any(c.source == "measured" for c in data.ceilings):
        key.append(Line2D([], [], color="#555555", lw=1.1, ls="--", label="measured ceiling"))
    key.append(Line2D([], [], marker="D", ms=5, mfc="white", mec="#555555", ls="none", label="ridge point"))
    fig.legend(handles=key, loc="lower left", bbox_to_anchor=(box.x1 + 0.01, box.y0), borderaxespad=0, fontsize=7.5,
               frameon=False)
