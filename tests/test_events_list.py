"""The Events page's results table as an operator reads it: relative times with the exact
UTC time on hover, ids and errors on one line and whole on hover, a page size, and the same
events in the same order as `webhooks events list`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from html import unescape

import pytest

from app.settings import Settings
from tests.conftest import webhooks
from tests.events_site import Site, ids_of, make_site, site, table
from workers.ops.events_page.moments import relative
from workers.ops.events_page.search_template import SEARCH_CSS

__all__ = ["make_site", "site"]  # fixtures

RECENT = re.compile(r"just now|\d+ s ago|\d+ min ago")
NOW = datetime(2026, 12, 2, 18, 30, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("when", "shown"),
    [
        ("2026-12-02T18:29:57", "just now"),
        ("2026-12-02T18:30:20", "just now"),  # a receiver's clock a little ahead
        ("2026-12-02T18:29:15", "45 s ago"),
        ("2026-12-02T18:27:00", "3 min ago"),
        ("2026-12-02T16:10:00", "2 h ago"),
        ("2026-12-01T14:02:00", "yesterday 14:02"),
        ("2026-11-28T09:05:00", "28 Nov 09:05"),
        ("2025-12-31T23:59:00", "2025-12-31 23:59"),
        ("2026-12-02T19:30:00", "2 Dec 19:30"),  # ahead by an hour: said as it is
    ],
)
def test_times_read_relative_to_now(when: str, shown: str) -> None:
    assert relative(datetime.fromisoformat(when).replace(tzinfo=UTC), NOW) == shown


def test_rows_show_relative_times_with_the_exact_utc_time_on_hover(site: Site) -> None:
    site.harness.event("evt_1")
    site.harness.drain()
    record = site.harness.redis.hmget("webhook:event:inbound:evt_1", "received_at", "settled_at")
    exact = [
        datetime.fromtimestamp(float(value or 0), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for value in record
    ]
    page = site.get("/events")
    times = re.findall(r'<time datetime="([^"]*)"\s+title="([^"]*)">([^<]*)</time>', page)
    assert [(d, t) for d, t, _ in times] == [(exact[0], exact[0]), (exact[1], exact[1])]
    assert all(RECENT.fullmatch(text) for _, _, text in times), times
    assert "+00:00" not in page
    [row] = table(page, "events")
    assert row[1:6] == ["inbound", "evt_1", "order.created", "done", "1"]


def test_ids_and_errors_stay_on_one_line_whole_in_their_title(site: Site) -> None:
    long_id = "evt_stripe_" + "1234567890" * 8
    site.harness.event(long_id, "fail.sync")
    site.harness.drain()
    page = site.get("/events")
    error = f"RuntimeError: CRM said no to {long_id}"
    link = re.search(r'<td class="id"><a href="[^"]*"\s+class="clip" title="([^"]*)">', page)
    assert link is not None and unescape(link.group(1)) == long_id
    title = re.search(r'<td class="error"><span class="clip" title="([^"]*)">', page)
    assert title is not None and unescape(title.group(1)).endswith(error)
    # The styles: one line, an ellipsis, no break inside a word.
    css = site.get("/events/style.css")
    assert SEARCH_CSS in css
    clip = re.search(r"\.clip \{([^}]*)\}", SEARCH_CSS)
    assert clip is not None
    for rule in ("white-space: nowrap", "overflow: hidden", "text-overflow: ellipsis"):
        assert rule in clip.group(1)
    assert not re.search(r"td\.(id|error)[^{]*\{[^}]*word-break", css)


def test_every_field_has_a_label_above_it(site: Site) -> None:
    page = site.get("/events")
    form = page.split('class="search', 1)[1].split("</form>", 1)[0]
    fields = re.findall(r'<(?:input|select) id="([^"]*)"', form)
    labels = re.findall(r'<label for="([^"]*)">', form)
    assert fields == labels and len(fields) == 7


def test_a_page_size_is_chosen_among_a_few(site: Site) -> None:
    for n in range(30):
        site.harness.event(f"evt_{n:02}")
    assert len(site.rows()) == 30
    first = site.get("/events", limit="25")
    assert len(ids_of(first)) == 25 and '<option value="25" selected>' in first
    older = re.search(r'<a id="older" href="([^"]*)"', first)
    assert older is not None and "limit=25" in unescape(older.group(1))
    assert ids_of(site.get(unescape(older.group(1)))) == [f"evt_{n:02}" for n in range(4, -1, -1)]
    for bad in ("7", "100000", "x"):
        page = site.get("/events", limit=bad)
        assert "Page size: one of 25, 50, 100, 200." in page and len(ids_of(page)) == 30


def test_status_failed_is_dead_as_the_command_and_rq_dashboard_say(site: Site) -> None:
    site.harness.event("evt_ok")
    site.harness.event("evt_fail", "fail.sync")
    site.harness.drain()
    assert site.rows(status="failed") == site.rows(status="dead") == ["evt_fail"]
    assert '<option value="dead" selected>' in site.get("/events", status="failed")


@pytest.fixture
def ledger(site: Site, cli_env: Callable[[Settings], None]) -> Site:
    """Events of three types, done and dead, the command pointed at the same Redis."""
    cli_env(site.harness.settings)
    for n in range(12):
        event_type = ("order.created", "fail.sync", "bad.input")[n % 3]
        assert site.harness.event(f"evt_{n:02}", event_type).status_code == 200
    site.harness.drain()
    return site


def _command_ids(*args: str) -> list[str]:
    result = webhooks("events", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return [json.loads(line)["id"] for line in result.stdout.splitlines()]


def test_the_page_and_the_command_list_the_same_events_in_the_same_order(ledger: Site) -> None:
    received = ledger.harness.redis.zrange("webhook:events", 0, -1, withscores=True)
    middle = repr(received[4][1])
    searches = [
        {},
        {"status": "failed"},
        {"status": "done"},
        {"type": "fail.sync"},
        {"type": "fail.*"},
        {"type": "fail"},
        {"id": "evt_03"},
        {"source": "inbound", "since": middle},
        {"until": middle, "type": "bad.*"},
        {"limit": "25", "status": "dead"},
    ]
    for search in searches:
        args = [part for name, value in search.items() for part in (f"--{name}", value)]
        assert ledger.rows(**search) == _command_ids(*args), search
    assert ledger.rows(limit="25") == _command_ids("--limit", "25") != []
