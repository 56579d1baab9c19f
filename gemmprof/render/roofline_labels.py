"""Where the roofline's texts go: greedy placement in display space against markers, placed labels (hard), roof
lines (soft) and leader lines already drawn; crowds of markers get their labels in one ordered column."""

from __future__ import annotations

import math


def ridge_candidates(xy) -> list:
    """Up the ridge's dotted line from the bottom of the plot, right of it, else left of it, else higher."""
    return [(xy, 2 if va == "top" else -2, 4 + up, "left", va, 90) for up in (0, 40, 80, 120)
            for va in ("top", "bottom")]


def point_candidates(xy, size: float) -> list:
    """Around the marker, nearest first; the farther rings get a leader line."""
    out, base = [], size / 2 + 2.5
    for r in (base, base + 7, base + 18, base + 30):
        for deg in (0, 30, -30, 180, 150, -150, 90, -90, 60, -60, 120, -120):
            dx, dy = r * math.cos(math.radians(deg)), r * math.sin(math.radians(deg))
            ha = "left" if dx > 1 else ("right" if dx < -1 else "center")
            va = "bottom" if dy > 1 else ("top" if dy < -1 else "center")
            out.append((xy, dx, dy, ha, va, 0))
    return out


class Placer:
    """Greedy label placement in display space against markers, placed labels (hard) and roof lines (soft)."""

    def __init__(self, fig, ax):
        self.fig, self.ax = fig, ax
        self.renderer = fig.canvas.get_renderer()
        self.hard: list = []  # markers first, then placed labels
        self.markers = 0
        self.soft: list = []
        self.leaders: list = []  # leader lines drawn so far: a new one that crosses them costs

    def add_marker(self, xy, size_pt: float):
        from matplotlib.path import Path as MPath

        x, y = self.ax.transData.transform(xy)
        self.markers += 1
        r = size_pt * self.fig.dpi / 72 / 2 + 1
        self.hard.append(MPath([(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r), (x - r, y - r)]))

    def add_line(self, line, weight: float = 2.0):
        self.soft.append((line.get_transform().transform_path(line.get_path()), weight))

    def _polygon(self, xy, dx, dy, ha, va, rot, w, h):
        from matplotlib.path import Path as MPath

        ox, oy = self.ax.transData.transform(xy) + [dx * self.fig.dpi / 72, dy * self.fig.dpi / 72]
        left = {"left": 0, "center": -w / 2, "right": -w}[ha]
        bottom = {"bottom": 0, "center": -h / 2, "top": -h, "baseline": 0}[va]
        c, s = math.cos(math.radians(rot)), math.sin(math.radians(rot))
        corners = [(left, bottom), (left + w, bottom), (left + w, bottom + h), (left, bottom + h), (left, bottom)]
        return MPath([(ox + c * u - s * v, oy + s * u + c * v) for u, v in corners])

    def _leader_cost(self, cand) -> float:
        """A leader line that crosses roofs or labels costs, though less than the label itself would."""
        from matplotlib.path import Path as MPath

        start = self.ax.transData.transform(cand[0])
        end = start + [cand[1] * self.fig.dpi / 72, cand[2] * self.fig.dpi / 72]
        leader = MPath([start + (end - start) * 0.25, end])  # from just outside the marker
        return 0.5 * sum(wt for o, wt in self.soft if leader.intersects_path(o, filled=False)) + 3 * sum(
            leader.intersects_path(o, filled=False) for o in self.hard[self.markers:]) + 5 * sum(
            leader.intersects_path(o, filled=False) for o in self.leaders)

    def place(self, texts, candidates, colour, size, gid, arrow=False):
        """Try each text (the full one, then shorter ones) at each candidate in turn; keep the first that collides
        with nothing (dotted ridge lines aside), else the least bad."""
        from matplotlib.font_manager import FontProperties

        box, best, font = self.ax.bbox, None, FontProperties(size=size)
        line_h = self.renderer.get_text_width_height_descent("lp", font, ismath=False)[1]
        for j, text in enumerate([texts] if isinstance(texts, str) else texts):
            w, h, _ = self.renderer.get_text_width_height_descent(text, font, ismath=False)
            for i, cand in enumerate(candidates):
                poly = self._polygon(*cand, w + 2, max(h, line_h) + 2)
                inside = all(box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1 for x, y in poly.vertices)
                cost = (0 if inside else 1000) + 10 * sum(poly.intersects_path(o, filled=True) for o in self.hard) \
                    + sum(wt for o, wt in self.soft if poly.intersects_path(o, filled=False)) + j * 0.5 \
                    + (self._leader_cost(cand) if arrow and math.hypot(*cand[1:3]) > 8 else 0)
                if best is None or (cost, i) < best[0]:
                    best = ((cost, i), text, cand, poly)
                if cost - j * 0.5 < 1:
                    break
            if best[0][0] - j * 0.5 < 1:
                break
        _, text, (xy, dx, dy, ha, va, rot), poly = best
        far = arrow and math.hypot(dx, dy) > 8
        self._draw(text, xy, dx, dy, ha, va, rot, size, colour, gid, far)
        self.hard.append(poly)

    def _draw(self, text, xy, dx, dy, ha, va, rot, size, colour, gid, leader: bool):
        from matplotlib.path import Path as MPath

        self.ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, rotation=rot,
                         rotation_mode="anchor", fontsize=size, color=colour, gid=gid, zorder=6,
                         arrowprops={"arrowstyle": "-", "lw": 0.6, "color": "#777777", "shrinkA": 0,
                                     "shrinkB": 3} if leader else None)
        if leader:
            start = self.ax.transData.transform(xy)
            self.leaders.append(MPath([start, start + [dx * self.fig.dpi / 72, dy * self.fig.dpi / 72]]))

    def place_column(self, marks: list, size: float) -> None:
        """A crowd of markers (several labels within a label's height of each other, nearly one above another)
        gets its labels in one column beside it, in the markers' top-to-bottom order: leader lines that never
        cross. Left or right, near or farther out: the side that collides least."""
        from matplotlib.font_manager import FontProperties
        from matplotlib.path import Path as MPath

        font = FontProperties(size=size)
        pt = self.fig.dpi / 72
        line_h = self.renderer.get_text_width_height_descent("lp", font, ismath=False)[1] + 2
        marks = sorted(marks, key=lambda m: -self.ax.transData.transform(m[0])[1])
        disp = [self.ax.transData.transform(m[0]) for m in marks]
        widths = [self.renderer.get_text_width_height_descent(m[1], font, ismath=False)[0] + 2 for m in marks]
        box = self.ax.bbox
        total = line_h * len(marks)
        centre = sum(y for _, y in disp) / len(disp)
        top = min(max(centre + total / 2, box.y0 + total), box.y1)
        ys = [top - line_h * (i + 0.5) for i in range(len(marks))]
        best = None
        for side in (-1, 1):
            for gap in (22, 36, 52):
                x = (min(d[0] for d in disp) - gap * pt) if side < 0 else (max(d[0] for d in disp) + gap * pt)
                polys = []
                for (_, _y), w, y in zip(disp, widths, ys, strict=True):
                    x0, x1 = (x - w, x) if side < 0 else (x, x + w)
                    polys.append(MPath([(x0, y - line_h / 2), (x1, y - line_h / 2), (x1, y + line_h / 2),
                                        (x0, y + line_h / 2), (x0, y - line_h / 2)]))
                inside = all(box.x0 <= vx <= box.x1 for p in polys for vx, _ in p.vertices)
                cost = (0 if inside else 1000) + sum(10 * sum(p.intersects_path(o, filled=True) for o in self.hard)
                                                     + sum(wt for o, wt in self.soft
                                                           if p.intersects_path(o, filled=False)) for p in polys)
                if best is None or cost < best[0]:
                    best = (cost, side, x, polys)
        _, side, x, polys = best
        for (xy, text, colour, _msize), (px, py), y, poly in zip(marks, disp, ys, polys, strict=True):
            self._draw(text, xy, (x - px) / pt, (y - py) / pt, "right" if side < 0 else "left", "center", 0, size,
                       colour, f"label:{text}", True)
            self.hard.append(poly)


def crowds(ax, marks: list, size: float, renderer) -> tuple[list[list], list]:
    """Split point labels into crowds (3 or more markers nearly one above another, closer than a label's height
    in a chain) and the rest, which are placed one by one."""
    from matplotlib.font_manager import FontProperties

    line_h = renderer.get_text_width_height_descent("lp", FontProperties(size=size), ismath=False)[1] + 2
    disp = [ax.transData.transform(m[0]) for m in marks]
    parent = list(range(len(marks)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(marks)):
        for j in range(i):
            if abs(disp[i][0] - disp[j][0]) < 2 * line_h and abs(disp[i][1] - disp[j][1]) < 1.5 * line_h:
                parent[root(i)] = root(j)
    groups: dict[int, list] = {}
    for i, m in enumerate(marks):
        groups.setdefault(root(i), []).append(m)
    crowded = [g for g in groups.values() if len(g) >= 3]
    rest = [m for g in groups.values() if len(g) < 3 for m in g]
    return crowded, rest
