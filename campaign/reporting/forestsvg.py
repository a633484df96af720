"""The forest plot as inline SVG, drawn here (no plotting library): what `--plot` draws with
matplotlib, for the self-contained page. Per timed workload (`campaign.reporting.report.forest_points`):
the geomean Δ as a point (hollow: one round, no interval), its interval as a line, the A/A floor as a
grey band, the zero line. Pure: the same verdicts give the same bytes.
"""
from __future__ import annotations

from html import escape

ROW = 22                    # px per workload
LABEL_W = 260               # px for the workload labels
PLOT_W = 520                # px for the axis
TOP, BOTTOM = 24, 40


def _extent(points: list[dict]) -> float:
    """Half-width of the axis in %: every point, interval end and floor inside, at least ±1 %."""
    values = [abs(p[k]) for p in points for k in ("point", "low", "high", "floor") if p.get(k) is not None]
    top = max(values + [0.01]) * 100 * 1.1
    for nice in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if top <= nice:
            return float(nice)
    return top


def svg(points: list[dict], title: str) -> str:
    """An ``<svg>`` element, or a paragraph saying why there is none."""
    if not points:
        return "<p class=note>No forest plot: no workload has a timed range (nothing was timed, or nothing reached Triton).</p>"
    half = _extent(points)
    height = TOP + ROW * len(points) + BOTTOM

    def x(value: float) -> float:
        return round(LABEL_W + (value * 100 + half) / (2 * half) * PLOT_W, 1)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class=forest role=img width="{LABEL_W + PLOT_W + 20}" '
           f'height="{height}" viewBox="0 0 {LABEL_W + PLOT_W + 20} {height}">',
           f"<title>{escape(title)}</title>"]
    for i, p in enumerate(points):
        y = TOP + ROW * i + ROW / 2
        label = f"{p['workload']} ({p['class']}{', noise floor' if p['noise_floor'] else ''})"
        out.append(f'<text x="{LABEL_W - 8}" y="{y + 4}" text-anchor="end">{escape(label)}</text>')
        if p["floor"] is not None:
            out.append(f'<rect x="{x(-p["floor"])}" y="{y - 8}" width="{round(x(p["floor"]) - x(-p["floor"]), 1)}" '
                       'height="16" fill="#d9d9d9"/>')
        if p["low"] is not None:
            out.append(f'<line x1="{x(p["low"])}" x2="{x(p["high"])}" y1="{y}" y2="{y}" stroke="#000" stroke-width="1.5"/>')
        fill = "#000" if p["low"] is not None else "#fff"
        out.append(f'<circle cx="{x(p["point"])}" cy="{y}" r="4" fill="{fill}" stroke="#000">'
                   f"<title>{escape(p['workload'])}: {p['point'] * 100:+.2f}%</title></circle>")
    axis = TOP + ROW * len(points)
    out.append(f'<line x1="{x(0)}" x2="{x(0)}" y1="{TOP - 6}" y2="{axis}" stroke="#888"/>')
    out.append(f'<line x1="{LABEL_W}" x2="{LABEL_W + PLOT_W}" y1="{axis}" y2="{axis}" stroke="#888"/>')
    for tick in (-half, -half / 2, 0.0, half / 2, half):
        out.append(f'<text x="{x(tick / 100)}" y="{axis + 14}" text-anchor="middle">{tick:+g}%</text>')
    out.append(f'<text x="{LABEL_W + PLOT_W / 2}" y="{axis + 32}" text-anchor="middle">geomean Δ % vs baseline '
               "(grey: A/A floor; hollow: one round, no interval)</text>")
    out.append("</svg>")
    return "\n".join(out)
