"""The counts as inline SVG, drawn on the server: per source, two aligned panels of stacked
bars, "received" (accepted, duplicate, rejected) over "worked" (done, retried, dead), on one
y scale so that every bar of a source compares with every other.

No script and no external file: geometry is computed here and the template writes plain
shapes with presentation attributes (which a CSP without inline styles allows): one `<path>`
per series and panel holding all its bars (numbers only), and over each bar an invisible
`<rect>` as tall as the panel with a `<title>`, so hovering anywhere in the bar's column
tells its interval and every count in it. One shape per bar rather than one per part keeps
the week's page small and quick to render.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from workers.ops.events_page.chart_range import RANGES
from workers.ops.events_page.picture import SourceCounts, Span, Timeline

PLOT = 720  # pixels for the bars, whatever their number
LEFT = 52  # the y axis' labels
RIGHT = 14
PANEL = 80  # each panel's height
TOP = 22  # the first panel's name above it
GAP = 30  # the second panel's name between the two
AXIS = 24  # the x axis' labels
WIDTH = LEFT + PLOT + RIGHT
HEIGHT = TOP + PANEL + GAP + PANEL + AXIS
INK = "#1a202c"
GRID = "#cbd5e0"
COLORS = {
    "accepted": "#2b6cb0",
    "duplicate": "#90cdf4",
    "rejected": "#c05621",
    "done": "#2f855a",
    "retried": "#805ad5",
    "dead": "#c53030",
}
LABELS = {"dead": "dead-lettered"}
# The two panels: their series, stacked bottom up.
PANELS = (
    ("received", ("accepted", "duplicate", "rejected")),
    ("worked", ("done", "retried", "dead")),
)


def label(name: str) -> str:
    return LABELS.get(name, name)


@dataclass(frozen=True, slots=True)
class Part:
    """One series' part of a stacked bar."""

    name: str
    y: float
    height: float
    color: str


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    width: float
    title: str
    parts: tuple[Part, ...]  # bottom up


@dataclass(frozen=True, slots=True)
class Gridline:
    y: float
    label: str


@dataclass(frozen=True, slots=True)
class Path:
    """One series' parts of every bar of a panel, as an SVG path's `d`, in tenths of a pixel
    (whole numbers: quick to write; the template scales them)."""

    name: str
    color: str
    d: str


@dataclass(frozen=True, slots=True)
class Panel:
    name: str
    top: int
    bars: tuple[Bar, ...]
    paths: tuple[Path, ...]
    gridlines: tuple[Gridline, ...]


@dataclass(frozen=True, slots=True)
class Entry:
    """A legend line: the series' colour, name and total in the range."""

    name: str
    label: str
    color: str
    total: int


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class SourceChart:
    source: str
    title: str
    desc: str  # what a screen reader says: every series' total in the range
    total: int
    panels: tuple[Panel, ...]
    legend: tuple[tuple[str, tuple[Entry, ...]], ...]  # per panel


@dataclass(frozen=True, slots=True)
class Chart:
    span: Span
    auto: bool
    heading: str
    width: int
    height: int
    left: int  # where the plot starts (the y axis' labels end right of it)
    right: int  # where it ends
    axis_y: int  # the x axis' labels' baseline
    ticks: tuple[Tick, ...]
    sources: tuple[SourceChart, ...]


def scale(peak: int) -> tuple[int, int]:
    """The y axis' top and gridline step: 1, 2 or 5 times a power of ten, at most four lines
    above zero, the top at or above the peak."""
    unit = 1
    while True:
        for step in (unit, 2 * unit, 5 * unit):
            if peak <= 4 * step:
                return max(1, -(-peak // step)) * step, step
        unit *= 10


def _clock(timestamp: int, span: Span) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%a %d %b %H:%M" if span is Span.WEEK else "%H:%M")


def _ticks(timeline: Timeline, step: float) -> tuple[Tick, ...]:
    every, form = {
        Span.HOUR: (600, "%H:%M"),
        Span.DAY: (3 * 3600, "%H:%M"),
        Span.WEEK: (86_400, "%a %d"),
    }[timeline.window.span]
    return tuple(
        Tick(round(LEFT + i * step, 2), datetime.fromtimestamp(start, UTC).strftime(form))
        for i, start in enumerate(timeline.starts)
        if start % every == 0
    )


def _windows(timeline: Timeline) -> list[str]:
    """Each bar's interval as its title says it."""
    span, step = timeline.window.span, timeline.window.step
    return [
        f"{_clock(start, span)} to {_clock(start + step, Span.HOUR)} UTC"
        for start in timeline.starts
    ]


def _panel(
    name: str,
    series: list[tuple[str, tuple[int, ...]]],
    top: int,
    axis: tuple[int, int],
    windows: list[str],
) -> Panel:
    ceiling, every = axis
    # Tenths of a pixel, whole numbers, from here on.
    step = PLOT * 10 / len(windows)
    width = max(10, int(step * 0.8))
    bottom = (top + PANEL) * 10
    per_count = PANEL * 10 / ceiling
    drawn: dict[str, list[str]] = {series_name: [] for series_name, _ in series}
    bars = []
    for i, window in enumerate(windows):
        x = int(LEFT * 10 + i * step + (step - width) / 2)
        stacked = 0
        parts, said = [], []
        for series_name, counts in series:
            count = counts[i]
            if count <= 0:
                continue
            height = max(10, int(count * per_count + 0.5))  # a single count stays visible
            y = bottom - stacked - height
            parts.append(Part(series_name, y / 10, height / 10, COLORS[series_name]))
            drawn[series_name].append(f"M{x} {y}h{width}v{height}h-{width}z")
            said.append(f"{count} {label(series_name)}")
            stacked += height
        if parts:
            bars.append(Bar(x / 10, width / 10, f"{window}: {', '.join(said)}", tuple(parts)))
    lines = tuple(
        Gridline(round(bottom / 10 - value / ceiling * PANEL, 1), str(value))
        for value in range(0, ceiling + 1, every)
    )
    paths = tuple(Path(name, COLORS[name], "".join(d)) for name, d in drawn.items() if d)
    return Panel(name, top, tuple(bars), paths, lines)


def _source(counts: SourceCounts, windows: list[str], range_text: str) -> SourceChart:
    panels = [(name, [(s, counts.of(s).counts) for s in names]) for name, names in PANELS]
    # The scale's peak: the highest stack of either panel.
    stacks = (zip(*(c for _, c in series), strict=True) for _, series in panels)
    peak = max((sum(column) for stack in stacks for column in stack), default=0)
    axis = scale(peak)
    tops = (TOP, TOP + PANEL + GAP)
    drawn = tuple(
        _panel(name, series, top, axis, windows)
        for (name, series), top in zip(panels, tops, strict=True)
    )
    legend = tuple(
        (name, tuple(Entry(s, label(s), COLORS[s], counts.of(s).total) for s in names))
        for name, names in PANELS
    )
    said = "; ".join(
        f"{name}: " + ", ".join(f"{e.total} {e.label}" for e in entries) for name, entries in legend
    )
    title = f"{counts.source}: events {range_text} (UTC)"
    total = sum(s.total for s in counts.series)
    return SourceChart(counts.source, title, f"{said}.", total, drawn, legend)


def draw(timeline: Timeline) -> Chart:
    span = timeline.window.span
    name, grain = RANGES[span]
    to = _clock(int(timeline.now), Span.HOUR)
    range_text = f"{grain}, {name.lower()} to {to}"
    windows = _windows(timeline)
    sources = tuple(_source(counts, windows, range_text) for counts in timeline.sources)
    heading = f"{name}, {grain} (UTC, to {to})"
    ticks = _ticks(timeline, PLOT / len(timeline.starts))
    return Chart(
        span, timeline.auto, heading, WIDTH, HEIGHT, LEFT, LEFT + PLOT, HEIGHT - 6, ticks, sources
    )
