"""The Events page's chart: what it counts (from app/timeline.py's counters), its range (the
one that fits the data, or the one asked for), its shared scale, and what it tells a screen
reader, through the real page against a real Redis and the real worker, and through `draw`."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from html import unescape

import pytest
import redis.asyncio as aioredis
import redis.client
from redis import Redis

import app.timeline
from app.receiver_counts import ReceiverCounts
from app.timeline import (
    FIELDS,
    INTERVAL,
    flush,
    interval_of,
    minute_key,
    minute_of,
    note_fresh,
    timeline_key,
)
from tests.events_site import Site, make_site, site
from workers.ops.events_page.chart import PANEL, Chart, draw, scale
from workers.ops.events_page.chart_range import chosen
from workers.ops.events_page.chart_template import CHART
from workers.ops.events_page.picture import (
    WINDOWS,
    Series,
    SourceCounts,
    Span,
    Timeline,
    read_timeline,
)
from workers.ops.events_page.templates import environment

__all__ = ["make_site", "site"]  # fixtures


@pytest.fixture
def quiet_flusher(monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver's own flusher waits an hour: the test flushes when it means to."""
    monkeypatch.setattr(app.timeline, "FLUSH_EVERY", 3600.0)


def _flush(site: Site, counts: ReceiverCounts, first: bool = False) -> None:
    """What a receiver does: note which counters are new when it starts, then flush."""

    async def run() -> None:
        client = aioredis.Redis.from_url(site.harness.settings.redis_url)
        try:
            await (note_fresh if first else flush)(client, "webhook", counts)
        finally:
            await client.aclose()

    asyncio.run(run())


def chart_of(page: str) -> str:
    found = re.search(r'<section id="day".*?</section>', page, re.S)
    assert found is not None
    return found.group(0)


def legend(page: str, source: str = "inbound") -> dict[str, int]:
    """The legend's total per series of one source."""
    block = chart_of(page).split(f'<h3 class="h6">{source}</h3>', 1)[1].split("</table>", 1)[0]
    found = re.findall(r'<tr class="series-(\w+)">.*?<td\s+class="total">(\d+)</td>', block, re.S)
    return {name: int(total) for name, total in found}


def counters(redis: Redis, pattern: str) -> dict[str, int]:
    """The timeline's hashes matching `pattern`, summed per field."""
    summed = dict.fromkeys(FIELDS, 0)
    for key in redis.keys(pattern):
        for name, value in redis.hgetall(key).items():
            summed[name.decode()] += int(value)
    return summed


@pytest.fixture
def counted(quiet_flusher: None, make_site: Callable[..., Site]) -> Site:
    """Four events (two done, one retried then dead-lettered, one dead-lettered at once), a
    duplicate and a forgery, flushed as a receiver does."""
    site = make_site(webhook_max_retries=1)
    counts = ReceiverCounts(frozenset(["inbound"]))
    _flush(site, counts, first=True)  # no workers' counters yet: they will count from zero
    for event_id, event_type in [("a", "order.created"), ("b", "order.created")]:
        site.harness.event(event_id, event_type)
    site.harness.event("c", "fail.sync")  # fails: retried at once, fails: dead-lettered
    site.harness.event("d", "bad.input")  # permanent: dead-lettered at once
    site.harness.event("a")  # a duplicate
    site.harness.send(b'{"id": "forged"}', secret="wrong")  # rejected
    site.harness.drain()
    _flush(site, counts)
    return site


def test_the_chart_counts_received_and_worked_with_retried_from_the_workers_counter(
    counted: Site,
) -> None:
    assert legend(counted.get("/events")) == {
        "accepted": 4,
        "duplicate": 1,
        "rejected": 1,
        "done": 2,
        "retried": 1,
        "dead": 2,
    }
    assert counted.harness.redis.hget("webhook:stats:inbound", "retried") == b"1"


def test_the_legend_totals_equal_the_counters_in_every_range(counted: Site) -> None:
    redis = counted.harness.redis
    minutes = counters(redis, "webhook:timeline:inbound:minute:*")
    assert legend(counted.get("/events", range="hour")) == minutes
    quarters = counters(redis, "webhook:timeline:inbound:[0-9]*")
    assert quarters == minutes
    for span in ("day", "week"):
        assert legend(counted.get("/events", range=span)) == quarters


def test_each_bar_says_its_minute_and_every_count_in_it(counted: Site) -> None:
    # One flush took them all: they are in one minute.
    titles = re.findall(
        r"<title>(\d\d:\d\d to \d\d:\d\d UTC): ([^<]*)</title>", counted.get("/events")
    )
    assert [said for _, said in titles] == [
        "4 accepted, 1 duplicate, 1 rejected",
        "2 done, 1 retried, 2 dead-lettered",
    ]
    assert titles[0][0] == titles[1][0]


def test_each_chart_is_an_image_with_a_title_a_summary_and_a_legend(counted: Site) -> None:
    chart = chart_of(counted.get("/events"))
    svg = re.search(r"<svg[^>]*>", chart)
    assert svg is not None and 'role="img"' in svg.group(0)
    assert 'aria-labelledby="chart-1-title chart-1-desc"' in svg.group(0)
    assert re.search(r'<title id="chart-1-title">inbound: events per minute, last hour', chart)
    desc = re.search(r'<desc id="chart-1-desc">(.*?)</desc>', chart)
    assert desc is not None
    assert desc.group(1) == (
        "received: 4 accepted, 1 duplicate, 1 rejected; worked: 2 done, 1 retried, 2 dead-lettered."
    )
    for name in FIELDS:
        assert f'class="swatch swatch-{name}"' in chart
    assert "one requeued that fails again counts twice" in chart


def test_the_chart_holds_no_script_and_no_event_handler(counted: Site) -> None:
    chart = chart_of(counted.get("/events"))
    assert "<script" not in chart.lower()
    assert not re.search(r"\son\w+\s*=", chart)
    assert "javascript:" not in chart.lower()


def _timeline(span: Span, **peaks: tuple[int, int]) -> Timeline:
    """One source whose series have one bar each: name=(bar index, count)."""
    window = WINDOWS[span]
    starts = window.starts(time.time())
    series = []
    for name in FIELDS:
        at, count = peaks.get(name, (0, 0))
        series.append(Series(name, tuple(count if i == at else 0 for i in range(window.bars))))
    return Timeline(window, starts, (SourceCounts("inbound", tuple(series)),), False, time.time())


def _bar(chart: Chart, name: str) -> tuple[float, float]:
    """The height and bottom of the one part of a bar that is `name`'s."""
    [part] = [
        part
        for panel in chart.sources[0].panels
        for bar in panel.bars
        for part in bar.parts
        if part.name == name
    ]
    return part.height, part.y + part.height


def test_a_sources_series_share_one_scale_across_both_panels() -> None:
    chart = draw(_timeline(Span.DAY, accepted=(10, 40), done=(20, 10)))
    assert _bar(chart, "accepted")[0] == pytest.approx(PANEL)
    assert _bar(chart, "done")[0] == pytest.approx(PANEL / 4)


def test_stacked_bars_sit_one_on_another_in_proportion() -> None:
    chart = draw(_timeline(Span.HOUR, done=(59, 30), retried=(59, 10)))
    done_height, done_bottom = _bar(chart, "done")
    retried_height, retried_bottom = _bar(chart, "retried")
    assert done_height == pytest.approx(3 * retried_height)
    assert retried_bottom == pytest.approx(done_bottom - done_height)


def test_the_y_axis_has_a_few_labelled_gridlines_up_to_a_round_top() -> None:
    assert scale(0) == (1, 1)
    assert scale(7) == (8, 2)
    assert scale(40) == (40, 10)
    assert scale(1234) == (1500, 500)
    chart = draw(_timeline(Span.DAY, accepted=(3, 7)))
    labels = [line.label for line in chart.sources[0].panels[0].gridlines]
    assert labels == ["0", "2", "4", "6", "8"]


def test_the_axis_labels_are_large_and_dark() -> None:
    assert 'font-size="12"' in CHART and 'font-size="10"' not in CHART
    assert 'fill="#1a202c"' in CHART


def test_hostile_source_names_are_escaped() -> None:
    hostile = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    timeline = _timeline(Span.HOUR, accepted=(1, 2))
    counts = timeline.sources[0]
    timeline = Timeline(
        timeline.window,
        timeline.starts,
        (SourceCounts(hostile, counts.series),),
        True,
        timeline.now,
    )
    chart = draw(timeline)
    html = environment.get_template("chart.html").render(chart=chart, chart_links=[])
    assert "<script>" not in html and "<img src=x" not in html
    assert unescape(html).count(hostile) == 2  # its heading and its SVG's title


def _count(redis: Redis, key: str, name: str, count: int) -> None:
    redis.hincrby(key, name, count)


def _read(redis: Redis, span: Span | None, now: float) -> Timeline:
    return read_timeline(redis, "webhook", ["inbound"], now, span)


def test_auto_shows_the_last_hour_when_everything_happened_in_it(redis: Redis) -> None:
    now = time.time()
    for key in (
        minute_key("webhook", "inbound", minute_of(now - 300)),
        timeline_key("webhook", "inbound", interval_of(now - 300)),
    ):
        _count(redis, key, "accepted", 3)
    shown = _read(redis, None, now)
    assert shown.window.span is Span.HOUR and shown.auto
    assert shown.sources[0].of("accepted").counts[-6] == 3


def test_an_empty_stack_shows_the_last_hour(redis: Redis) -> None:
    assert _read(redis, None, time.time()).window.span is Span.HOUR


def test_auto_shows_the_day_when_something_happened_before_the_hour(redis: Redis) -> None:
    now = time.time()
    _count(redis, timeline_key("webhook", "inbound", interval_of(now - 3 * 3600)), "done", 1)
    assert _read(redis, None, now).window.span is Span.DAY


def test_counts_from_before_the_minutes_existed_show_the_day_they_were_counted_in(
    redis: Redis,
) -> None:
    # An upgrade: the version before kept only the 15-minute counters.
    now = time.time()
    _count(redis, timeline_key("webhook", "inbound", interval_of(now)), "accepted", 5)
    shown = _read(redis, None, now)
    assert shown.window.span is Span.DAY
    assert shown.sources[0].of("accepted").total == 5


def test_auto_shows_the_week_when_something_happened_before_the_day(redis: Redis) -> None:
    now = time.time()
    _count(redis, timeline_key("webhook", "inbound", interval_of(now - 3 * 86_400)), "dead", 2)
    assert _read(redis, None, now).window.span is Span.WEEK


def test_the_week_sums_each_hours_four_quarters(redis: Redis) -> None:
    now = time.time()
    hour = int((now - 2 * 86_400) // 3600 * 3600)
    for quarter in range(4):
        _count(redis, timeline_key("webhook", "inbound", hour + quarter * INTERVAL), "done", 1)
    shown = _read(redis, Span.WEEK, now)
    done = shown.sources[0].of("done").counts
    assert done[shown.starts.index(hour)] == 4 and sum(done) == 4


def test_a_range_asked_for_is_shown_whatever_fits(redis: Redis) -> None:
    now = time.time()
    _count(redis, minute_key("webhook", "inbound", minute_of(now)), "accepted", 1)
    for span in Span:
        shown = _read(redis, span, now)
        assert shown.window.span is span and not shown.auto
        assert len(shown.starts) == {Span.HOUR: 60, Span.DAY: 96, Span.WEEK: 168}[span]


def test_the_range_parameter_is_hour_day_or_week_and_anything_else_is_auto() -> None:
    assert [chosen(v) for v in ("hour", "day", "week")] == [Span.HOUR, Span.DAY, Span.WEEK]
    assert [chosen(v) for v in (None, "auto", "year", "<b>")] == [None] * 4


def test_the_page_shows_the_range_asked_for_and_links_to_each(site: Site) -> None:
    page = site.get("/events", range="week", source="inbound")
    assert '<h2 class="h5">Last 7 days, per hour (UTC, to' in page
    links = re.findall(
        r'<a href="([^"]*)"\s*(class="current" aria-current="page")?>([^<]*)</a>', chart_of(page)
    )
    assert [(unescape(url), bool(current), text) for url, current, text in links] == [
        ("/events?source=inbound&range=auto#day", False, "auto"),
        ("/events?source=inbound&range=hour#day", False, "hour"),
        ("/events?source=inbound&range=day#day", False, "day"),
        ("/events?source=inbound&range=week#day", True, "week"),
    ]


def test_the_page_as_opened_says_which_range_auto_chose(site: Site) -> None:
    chart = chart_of(site.get("/events"))
    assert '<h2 class="h5">Last hour, per minute (UTC, to' in chart
    assert re.search(r'class="current" aria-current="page">auto \(hour\)</a>', chart)
    assert "nothing in this range" in chart


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every command sent alone and every pipeline sent, as they happen."""
    sent: list[str] = []
    alone = Redis.execute_command
    together = redis.client.Pipeline.execute

    def command(self: Redis, *args: object, **options: object) -> object:
        sent.append(str(args[0]))
        return alone(self, *args, **options)

    def pipeline(self: redis.client.Pipeline, raise_on_error: bool = True) -> list[object]:
        sent.append("pipeline")
        return together(self, raise_on_error)

    monkeypatch.setattr(Redis, "execute_command", command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", pipeline)
    yield sent


@pytest.mark.parametrize("span", [None, *Span], ids=["auto", *(str(s) for s in Span)])
def test_the_chart_is_read_in_one_round_trip(
    redis: Redis, round_trips: list[str], span: Span | None
) -> None:
    sources = [f"source{n}" for n in range(5)]
    read_timeline(redis, "webhook", sources, time.time(), span)
    assert round_trips == ["pipeline"]
