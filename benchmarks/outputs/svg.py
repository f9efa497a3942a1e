"""Tiny dependency-free SVG charts (line/step and bar), for the self-contained HTML report."""

from __future__ import annotations

from html import escape

__all__ = ["PALETTE", "bar_chart", "color_map", "line_chart"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
W, H, L, R, T, B = 560, 300, 60, 150, 30, 45


def color_map(names: list[str]) -> dict[str, str]:
    """One fixed color per target, so every plot of a report agrees."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _frame(
    title: str,
    xlabel: str,
    ylabel: str,
    xs: tuple[float, float],
    ys: tuple[float, float],
    xticks: bool = True,
) -> list[str]:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img">',
        f"<title>{escape(title)}</title>",
        (
            f'<text x="{W / 2 - R / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">'
            f"{escape(title)}</text>"
        ),
        f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="#333"/>',
        f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="#333"/>',
        f'<text x="{(L + W - R) / 2}" y="{H - 8}" text-anchor="middle" font-size="12">{escape(xlabel)}</text>',
        (
            f'<text x="14" y="{(T + H - B) / 2}" text-anchor="middle" font-size="12" '
            f'transform="rotate(-90 14 {(T + H - B) / 2})">{escape(ylabel)}</text>'
        ),
    ]
    for v in _ticks(*xs) if xticks else []:
        x = _sx(v, xs)
        out.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle" font-size="10">{v:.3g}</text>')
    for v in _ticks(*ys):
        y = _sy(v, ys)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 5}" y="{y + 3:.1f}" text-anchor="end" font-size="10">{v:.3g}</text>')
    return out


def _sx(v: float, xs: tuple[float, float]) -> float:
    span = (xs[1] - xs[0]) or 1.0
    return L + (v - xs[0]) / span * (W - L - R)


def _sy(v: float, ys: tuple[float, float]) -> float:
    span = (ys[1] - ys[0]) or 1.0
    return H - B - (v - ys[0]) / span * (H - B - T)


def _color(name: str, i: int, colors: dict[str, str] | None) -> str:
    return (colors or {}).get(name) or PALETTE[i % len(PALETTE)]


def line_chart(
    series: dict[str, tuple[list[float], list[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    step: bool = False,
    markers: bool = False,
    colors: dict[str, str] | None = None,
) -> str:
    pts = [(x, y) for xs, ys in series.values() for x, y in zip(xs, ys, strict=True)]
    if not pts:
        return f"<p><em>{escape(title)}: no data</em></p>"
    xr = (min(p[0] for p in pts), max(p[0] for p in pts))
    yr = (min(0.0, min(p[1] for p in pts)), max(p[1] for p in pts))
    out = _frame(title, xlabel, ylabel, xr, yr)
    for i, (name, (xs, ys)) in enumerate(series.items()):
        color = _color(name, i, colors)
        coords: list[str] = []
        prev_y: float | None = None
        for x, y in zip(xs, ys, strict=True):
            if step and prev_y is not None:
                coords.append(f"{_sx(x, xr):.1f},{_sy(prev_y, yr):.1f}")
            coords.append(f"{_sx(x, xr):.1f},{_sy(y, yr):.1f}")
            prev_y = y
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(coords)}"/>')
        if markers:
            out.extend(
                f'<circle cx="{_sx(x, xr):.1f}" cy="{_sy(y, yr):.1f}" r="3" fill="{color}"/>'
                for x, y in zip(xs, ys, strict=True)
            )
        ly = T + 14 * i + 8
        out.append(f'<rect x="{W - R + 10}" y="{ly - 8}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{W - R + 25}" y="{ly + 1}" font-size="11">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    series: dict[str, list[int]],
    labels: list[str],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    colors: dict[str, str] | None = None,
) -> str:
    """Grouped bars: one group per label, one bar per series."""
    if not labels or not series:
        return f"<p><em>{escape(title)}: no data</em></p>"
    top = max((max(v) for v in series.values() if v), default=0) or 1
    out = _frame(title, xlabel, ylabel, (0, len(labels)), (0, top), xticks=False)
    group_w = (W - L - R) / len(labels)
    bar_w = group_w * 0.8 / len(series)
    for i, (name, counts) in enumerate(series.items()):
        color = _color(name, i, colors)
        for j, c in enumerate(counts):
            x = L + j * group_w + group_w * 0.1 + i * bar_w
            y = _sy(c, (0, top))
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{H - B - y:.1f}" '
                f'fill="{color}"><title>{escape(name)} {escape(labels[j])}: {c}</title></rect>'
            )
        ly = T + 14 * i + 8
        out.append(f'<rect x="{W - R + 10}" y="{ly - 8}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{W - R + 25}" y="{ly + 1}" font-size="11">{escape(name)}</text>')
    for j, lab in enumerate(labels):
        if len(labels) <= 12 or j % (len(labels) // 12 + 1) == 0:
            x = L + (j + 0.5) * group_w
            out.append(
                f'<text x="{x:.1f}" y="{H - B + 28}" text-anchor="middle" font-size="9">{escape(lab)}</text>'
            )
    out.append("</svg>")
    return "\n".join(out)
