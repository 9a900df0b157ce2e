"""Charts as inline SVG drawn on the server: no chart library, no script, nothing from a CDN.

Each chart is a polyline (or bars) in a fixed ``viewBox`` with a few axis labels. Only numbers
and escaped labels go into the markup, and no ``style`` attribute is used, so the dashboard's
strict Content-Security-Policy holds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 600, 160
PAD_LEFT, PAD_BOTTOM, PAD_TOP = 44, 20, 10


def _nice(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}".rstrip("0").rstrip(".") or "0"


def _label(at: int, span_s: float) -> str:
    """A time on the x axis: the hour and minute, with the weekday beyond a day."""
    moment = dt.datetime.fromtimestamp(at)
    return moment.strftime("%a %H:%M" if span_s > 24 * 3600 else "%H:%M")


def line_chart(points: Sequence[tuple[int, float | None]], *, title: str, unit: str = "",
               second: Sequence[tuple[int, float | None]] | None = None, second_title: str = "") -> Markup:
    """A line per series over time (``(start of the point, value)``; None leaves a gap), y from
    zero. The points are evenly spaced (a minute, 10 minutes, an hour)."""
    values = [v for _, v in points if v is not None] + [v for _, v in (second or []) if v is not None]
    top = max(values + [0.0]) or 1.0
    plot_w, plot_h = WIDTH - PAD_LEFT - 4, HEIGHT - PAD_BOTTOM - PAD_TOP
    count = max(len(points) - 1, 1)

    def xy(i: int, value: float) -> str:
        return f"{PAD_LEFT + plot_w * i / count:.1f},{PAD_TOP + plot_h * (1 - value / top):.1f}"

    def polylines(series: Sequence[tuple[int, float | None]], css: str) -> list[str]:
        lines: list[list[str]] = []
        run: list[str] = []
        for i, (_, value) in enumerate(series):
            if value is None:
                if run:
                    lines.append(run)
                run = []
            else:
                run.append(xy(i, value))
        if run:
            lines.append(run)
        return [f'<polyline class="{css}" points="{" ".join(r)}"/>' if len(r) > 1 else
                f'<circle class="{css}" r="2" cx="{r[0].split(",")[0]}" cy="{r[0].split(",")[1]}"/>'
                for r in lines]

    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>"]
    for fraction in (0.0, 0.5, 1.0):
        y = PAD_TOP + plot_h * (1 - fraction)
        parts.append(f'<line class="grid" x1="{PAD_LEFT}" x2="{WIDTH - 4}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="axis" x="{PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f"{escape(_nice(top * fraction))}{escape(unit)}</text>")
    if points:
        last = len(points) - 1
        span_s = points[last][0] - points[0][0]
        for i in sorted({0, len(points) // 2, last}):
            x = PAD_LEFT + plot_w * i / count
            anchor = "start" if i == 0 else "end" if i == last else "middle"
            parts.append(f'<text class="axis" x="{x:.1f}" y="{HEIGHT - 4}" text-anchor="{anchor}">'
                         f"{escape(_label(points[i][0], span_s))}</text>")
    parts += polylines(points, "series")
    if second is not None:
        parts += polylines(second, "series second")
        if second_title:
            parts.append(f'<text class="legend second" x="{WIDTH - 8}" y="{PAD_TOP + 10}" '
                         f'text-anchor="end">{escape(second_title)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def sparkline(values: Sequence[float], *, title: str) -> Markup:
    """A small line without axes, for tables."""
    width, height = 120, 24
    top = max(list(values) + [0.0]) or 1.0
    count = max(len(values) - 1, 1)
    points = " ".join(f"{width * i / count:.1f},{height - 2 - (height - 4) * v / top:.1f}"
                      for i, v in enumerate(values))
    return Markup(f'<svg class="spark" viewBox="0 0 {width} {height}" role="img" '
                  f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
                  f'<polyline class="series" points="{points}"/></svg>')
