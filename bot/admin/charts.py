"""Pure: small inline SVG charts (stacked bars, lines) rendered on the server, labels escaped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP = 720, 220, 48, 28, 12
PALETTE = ("#2f6f4f", "#c9a227", "#d2691e", "#b22222", "#4169e1", "#6a5acd", "#708090")


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float]


def nice_top(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten, times four, that holds `value`:
    axis ticks at round numbers."""
    if value <= 0:
        return 1.0
    quarter = value / 4
    power = 10 ** math.floor(math.log10(quarter))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= quarter)
    return step * 4


def _ticks(top: float) -> list[float]:
    return [top * i / 4 for i in range(5)]


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.2f}"


def _frame(title: str, labels: Sequence[str], top: float) -> list[str]:
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for tick in _ticks(top):
        y = PAD_TOP + plot_h - (plot_h * tick / top if top else 0)
        parts.append(f'<line x1="{PAD_LEFT}" x2="{WIDTH}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#ddd"/><text x="{PAD_LEFT - 4}" y="{y + 4:.1f}" '
                     f'text-anchor="end" font-size="10" fill="#555">{_fmt(tick)}</text>')
    step = max(1, len(labels) // 8)
    slot = (WIDTH - PAD_LEFT) / max(1, len(labels))
    for i, label in enumerate(labels):
        if i % step == 0:
            x = PAD_LEFT + slot * (i + 0.5)
            parts.append(f'<text x="{x:.1f}" y="{HEIGHT - 10}" text-anchor="middle" '
                         f'font-size="10" fill="#555">{escape(label)}</text>')
    return parts


def _legend(series: Sequence[Series]) -> str:
    items = "".join(f'<span class="key"><i class="swatch s{i}"></i>{escape(s.name)}</span>'
                    for i, s in enumerate(series))
    return f'<div class="legend">{items}</div>'


def stacked_bars(title: str, labels: Sequence[str], series: Sequence[Series]) -> Markup:
    """One bar per label, the series stacked bottom-up in palette order."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top = nice_top(max(totals, default=0.0))
    parts = _frame(title, labels, top)
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    slot = (WIDTH - PAD_LEFT) / max(1, len(labels))
    for i, label in enumerate(labels):
        base = float(PAD_TOP + plot_h)
        for k, s in enumerate(series):
            h = plot_h * s.values[i] / top
            if h <= 0:
                continue
            base -= h
            parts.append(f'<rect x="{PAD_LEFT + slot * i + slot * 0.1:.1f}" y="{base:.1f}" '
                         f'width="{slot * 0.8:.1f}" height="{h:.1f}" '
                         f'fill="{PALETTE[k % len(PALETTE)]}"><title>{escape(label)} '
                         f'{escape(s.name)}: {_fmt(s.values[i])}</title></rect>')
    parts.append("</svg>")
    return Markup("".join(parts) + _legend(series))


def lines(title: str, labels: Sequence[str], series: Sequence[Series], *,
          top: float | None = None) -> Markup:
    """One polyline per series; a point per label."""
    highest = max((v for s in series for v in s.values), default=0.0)
    top = top or nice_top(highest)
    parts = _frame(title, labels, top)
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    slot = (WIDTH - PAD_LEFT) / max(1, len(labels))
    for k, s in enumerate(series):
        points = " ".join(f"{PAD_LEFT + slot * (i + 0.5):.1f},"
                          f"{PAD_TOP + plot_h - plot_h * v / top:.1f}"
                          for i, v in enumerate(s.values))
        parts.append(f'<polyline points="{points}" fill="none" stroke-width="2" '
                     f'stroke="{PALETTE[k % len(PALETTE)]}"/>')
    parts.append("</svg>")
    return Markup("".join(parts) + _legend(series))


def hbars(title: str, rows: Sequence[tuple[str, float]]) -> Markup:
    """Horizontal bars, one per (label, value), for comparisons such as A/B arms."""
    top = max((v for _, v in rows), default=0.0) or 1.0
    height = 24 * len(rows) + 8
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {height}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for i, (label, value) in enumerate(rows):
        w = (WIDTH - 220) * value / top
        y = 4 + 24 * i
        parts.append(f'<text x="150" y="{y + 15}" text-anchor="end" font-size="11" '
                     f'fill="#333">{escape(label)}</text><rect x="156" y="{y}" '
                     f'width="{w:.1f}" height="18" fill="{PALETTE[i % len(PALETTE)]}"/>'
                     f'<text x="{160 + w:.1f}" y="{y + 14}" font-size="11" '
                     f'fill="#333">{_fmt(value)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
