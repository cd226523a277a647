"""The day as inline SVG, drawn on the server: one row of bars per count and source.

No script and no external file: geometry is computed here and the template writes plain
`<rect>`s with presentation attributes (which a CSP without inline styles allows) and a
`<title>` each, so hovering a bar tells its interval and count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from app.timeline import INTERVAL
from workers.ops.events_page.picture import Day, Series

STEP = 6  # pixels per interval
BAR = 5
HEIGHT = 28
COLORS = {
    "accepted": "#2b6cb0",
    "duplicate": "#718096",
    "rejected": "#c05621",
    "done": "#2f855a",
    "dead": "#c53030",
}


@dataclass(frozen=True, slots=True)
class Bar:
    x: int
    y: int
    height: int
    title: str


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    total: int
    peak: int
    color: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True, slots=True)
class Tick:
    x: int
    label: str


@dataclass(frozen=True, slots=True)
class SourceChart:
    source: str
    rows: tuple[Row, ...]


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    ticks: tuple[Tick, ...]
    sources: tuple[SourceChart, ...]


def _clock(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%H:%M")


def _row(series: Series, starts: tuple[int, ...]) -> Row:
    peak = series.peak
    bars = []
    for i, (start, count) in enumerate(zip(starts, series.counts, strict=True)):
        if count <= 0:
            continue
        height = max(1, round(count / peak * HEIGHT))
        window = f"{_clock(start)} to {_clock(start + INTERVAL)} UTC"
        bars.append(Bar(i * STEP, HEIGHT - height, height, f"{window}: {count} {series.name}"))
    return Row(series.name, series.total, peak, COLORS.get(series.name, "#4a5568"), tuple(bars))


def draw(day: Day) -> Chart:
    ticks = tuple(
        Tick(i * STEP, _clock(start))
        for i, start in enumerate(day.starts)
        if start % (3 * 3600) == 0
    )
    sources = tuple(
        SourceChart(source.source, tuple(_row(s, day.starts) for s in source.series))
        for source in day.sources
    )
    return Chart(len(day.starts) * STEP, HEIGHT, ticks, sources)
