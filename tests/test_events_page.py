"""The dashboard's Events page, through Flask's test client against a real Redis and the real
worker: search, one event, requeue and replay, the day's picture, and its guards."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any

import pytest
import redis.asyncio as aioredis
from flask.testing import FlaskClient
from redis import Redis

import app.timeline
from app.keys import job_id_for
from app.timeline import ReceiverCounts, flush, note_fresh
from tests.conftest import AUTH, SECRET, Harness
from workers import Event, PermanentError, handler
from workers.ops.dashboard import create_dashboard
from workers.ops.events_page import search

ORIGIN = {"Origin": "http://localhost"}
ROW_ID = re.compile(r'<td class="id"><a\s+href="[^"]*">([^<]*)</a>')
SERIES_TOTAL = re.compile(r'<tr class="series-(\w+)"><th>\w+</th><td class="total">(\d+)')


def ids_of(page: str) -> list[str]:
    return [unescape(found) for found in ROW_ID.findall(page)]


@dataclass
class Site:
    harness: Harness
    client: FlaskClient

    def get(self, path: str, **params: str) -> str:
        response = self.client.get(path, query_string=params or None, auth=AUTH)
        assert response.status_code == 200, response.status_code
        return response.get_data(as_text=True)

    def rows(self, **params: str) -> list[str]:
        """The event ids of the results table, in order."""
        page = self.get("/events", **params)
        return [
            unescape(i) for i in re.findall(r'<td class="id"><a\s+href="[^"]*">([^<]*)</a>', page)
        ]


@pytest.fixture
def make_site(make_harness: Callable[..., Harness]) -> Callable[..., Site]:
    """A receiver, the real worker and the dashboard on one Redis. Handlers: order.* is
    done, fail.* raises (dead-lettered at once: no retries), bad.* is permanent."""

    def make(**settings: Any) -> Site:
        harness = make_harness(webhook_max_retries=0, **settings)

        @handler("inbound", "order.created")
        def ok(event: Event) -> None:
            pass

        @handler("inbound", "fail.sync")
        def fail(event: Event) -> None:
            raise RuntimeError(f"CRM said no to {event.id}")

        @handler("inbound", "bad.input")
        def bad(event: Event) -> None:
            raise PermanentError("cannot be processed")

        dashboard = create_dashboard(harness.settings)
        return Site(harness, dashboard.test_client())

    return make


@pytest.fixture
def site(make_site: Callable[..., Site]) -> Site:
    return make_site()


def test_the_events_page_needs_the_dashboard_login(site: Site) -> None:
    for path in ("/events", "/events/event?source=inbound&id=x"):
        assert site.client.get(path).status_code == 401
        assert site.client.get(path, auth=(AUTH[0], "wrong")).status_code == 401


def test_rq_dashboards_navigation_links_the_events_page(site: Site) -> None:
    assert '<a href="/events" class="nav-link">Events</a>' in site.get("/")


def test_a_search_by_event_id_finds_the_event(site: Site) -> None:
    for n in range(3):
        site.harness.event(f"evt_{n}")
    assert site.rows(id="evt_1") == ["evt_1"]
    assert site.rows(id="evt_1", source="inbound") == ["evt_1"]
    assert site.rows(id="evt_9") == []
    assert "No event with that id" in site.get("/events", id="evt_9")


def test_results_are_newest_first_and_filter_by_type_status_and_time(site: Site) -> None:
    site.harness.event("evt_ok")
    site.harness.event("evt_fail", "fail.sync")
    site.harness.event("evt_later")
    site.harness.drain()
    assert site.rows() == ["evt_later", "evt_fail", "evt_ok"]
    assert site.rows(status="dead") == ["evt_fail"]
    assert site.rows(type="fail.sync") == ["evt_fail"]
    assert site.rows(type="fail.*") == ["evt_fail"]
    assert site.rows(type="fail") == []
    received = site.harness.redis.zrange("webhook:events", 0, -1, withscores=True)
    middle = str(received[1][1])
    assert site.rows(since=middle) == ["evt_later", "evt_fail"]
    assert site.rows(until=middle) == ["evt_fail", "evt_ok"]
    assert site.rows(source="inbound", status="done") == ["evt_later", "evt_ok"]


def test_a_bad_field_is_named_without_echoing_it(site: Site) -> None:
    page = site.get("/events", since="<b>soon</b>", source="nope", status="gone")
    assert "since: expected ISO 8601" in page and "Unknown source" in page
    assert "Unknown status" in page and "<b>soon</b>" not in page


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "PAGE", 4)
    monkeypatch.setattr(search, "CHUNK", 3)


def test_older_pages_continue_without_repeats_or_gaps(site: Site, small_pages: None) -> None:
    ids = [f"evt_{n:02}" for n in range(11)]
    for event_id in ids:
        site.harness.event(event_id)
    seen: list[str] = []
    params: dict[str, str] = {}
    while True:
        page = site.get("/events", **params)
        seen += [
            unescape(i) for i in re.findall(r'<td class="id"><a\s+href="[^"]*">([^<]*)</a>', page)
        ]
        older = re.search(r'<a id="older" href="([^"]*)"', page)
        if older is None:
            break
        params = {"after": dict(_query(unescape(older.group(1))))["after"]}
    assert seen == ids[::-1]


def _query(url: str) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl, urlsplit

    return parse_qsl(urlsplit(url).query)


def test_a_filter_that_reads_records_stops_at_its_budget_and_offers_to_go_on(
    site: Site, small_pages: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "SCAN_BUDGET", 6)
    site.harness.event("evt_dead", "fail.sync")
    for n in range(8):
        site.harness.event(f"evt_{n}")
    site.harness.drain()
    page = site.get("/events", status="dead")
    assert "looked through 6 events" in page and 'id="older"' in page
    older = re.search(r'<a id="older" href="([^"]*)"', page)
    assert older is not None
    after = dict(_query(unescape(older.group(1))))
    assert after["status"] == "dead"
    assert site.rows(status="dead", after=after["after"]) == ["evt_dead"]


def test_the_event_page_shows_headers_payload_attempts_and_the_job(site: Site) -> None:
    site.harness.event("evt_fail", "fail.sync", amount=42, note="second line\nhere")
    site.harness.drain()
    page = site.get("/events/event", source="inbound", id="evt_fail")
    assert '<span class="status status-dead">dead</span>' in page
    assert "RuntimeError: CRM said no to evt_fail" in page
    payload = re.search(r'<pre id="payload" class="payload">(.*?)</pre>', page, re.S)
    assert payload is not None
    assert json.loads(unescape(payload.group(1)))["amount"] == 42
    assert '"amount": 42' in unescape(payload.group(1))  # pretty, one field per line
    job_id = job_id_for("inbound", "evt_fail")
    assert f'href="/0/view/job/{job_id}"' in page
    assert f">{job_id}</a> (failed, in rq-dashboard)" in page
    assert re.search(r"<td>failed</td>", page)  # the attempt RQ recorded
    assert "Traceback (most recent call last)" in unescape(page)
    assert 'id="requeue"' in page


def test_an_unknown_event_or_source_is_a_404(site: Site) -> None:
    for params in ({"source": "inbound", "id": "nope"}, {"source": "other", "id": "x"}, {}):
        response = site.client.get("/events/event", query_string=params, auth=AUTH)
        assert response.status_code == 404


@pytest.fixture
def dead(site: Site) -> Iterator[tuple[Site, str]]:
    site.harness.event("evt_dead", "fail.sync")
    site.harness.drain()
    yield site, job_id_for("inbound", "evt_dead")


def test_requeue_from_the_event_page_gives_a_full_budget_and_is_logged(
    dead: tuple[Site, str], caplog: pytest.LogCaptureFixture
) -> None:
    site, job_id = dead
    response = site.client.post(
        "/events/requeue", data={"source": "inbound", "id": "evt_dead"}, auth=AUTH, headers=ORIGIN
    )
    assert response.status_code == 303
    assert "done=requeued" in response.headers["Location"]
    assert site.harness.redis.lrange("rq:queue:webhooks", 0, -1) == [job_id.encode()]
    page = site.get(response.headers["Location"])
    assert "Requeued with its full retry budget." in page
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert (line.action, line.event_id, line.outcome, line.count, line.user) == (  # type: ignore[attr-defined]
        "events.requeue",
        "evt_dead",
        "requeued",
        1,
        AUTH[0],
    )


def test_replay_runs_a_done_event_again_from_its_stored_payload(site: Site) -> None:
    site.harness.event("evt_done")
    site.harness.drain()
    key = "webhook:event:inbound:evt_done"
    first = float(site.harness.redis.hget(key, "settled_at") or 0)
    response = site.client.post(
        "/events/replay", data={"source": "inbound", "id": "evt_done"}, auth=AUTH, headers=ORIGIN
    )
    assert "done=enqueued" in response.headers["Location"]
    assert site.harness.redis.hget(key, "status") == b"queued"
    site.harness.drain()
    assert site.harness.redis.hget(key, "status") == b"done"
    assert float(site.harness.redis.hget(key, "settled_at") or 0) > first


def test_a_pending_event_is_not_replayed(site: Site) -> None:
    site.harness.event("evt_waiting")
    page = site.get("/events/event", source="inbound", id="evt_waiting")
    assert 'id="replay"' not in page
    response = site.client.post(
        "/events/replay", data={"source": "inbound", "id": "evt_waiting"}, auth=AUTH, headers=ORIGIN
    )
    assert "done=pending" in response.headers["Location"]
    assert site.harness.redis.llen("rq:queue:webhooks") == 1


@pytest.mark.parametrize("path", ["/events/requeue", "/events/replay"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://evil.example"},
        {"Referer": "http://evil.example/"},
        {"Origin": "null"},
    ],
    ids=["no-origin", "foreign-origin", "foreign-referer", "null-origin"],
)
def test_actions_refuse_other_origins(
    dead: tuple[Site, str], path: str, headers: dict[str, str]
) -> None:
    site, job_id = dead
    data = {"source": "inbound", "id": "evt_dead"}
    response = site.client.post(path, data=data, auth=AUTH, headers=headers)
    assert response.status_code == 403
    assert site.harness.redis.zscore("rq:failed:webhooks", job_id) is not None


@pytest.mark.parametrize("path", ["/events/requeue", "/events/replay"])
def test_actions_do_not_answer_get(dead: tuple[Site, str], path: str) -> None:
    site, job_id = dead
    query = {"source": "inbound", "id": "evt_dead"}
    response = site.client.get(path, query_string=query, auth=AUTH, headers=ORIGIN)
    assert response.status_code == 405
    assert site.harness.redis.zscore("rq:failed:webhooks", job_id) is not None


def test_pages_forbid_scripts_and_framing(site: Site) -> None:
    response = site.client.get("/events", auth=AUTH)
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert "script-src" not in policy  # none at all: default-src 'none' covers it
    assert "frame-ancestors 'none'" in policy
    assert "<script" not in response.get_data(as_text=True)


def test_hostile_ids_types_and_errors_are_escaped(site: Site) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    site.harness.event(hostile, "fail.sync")
    site.harness.drain()
    for page in (site.get("/events"), site.get("/events/event", source="inbound", id=hostile)):
        assert "<img src=x" not in page and "<script>alert" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_queue_now_shows_depth_and_the_oldest_wait(site: Site) -> None:
    site.harness.event("evt_a")
    site.harness.event("evt_b")
    page = site.get("/events")
    assert "<b>2</b> queued" in page
    assert re.search(r"oldest queued: <b>\d+ s</b>", page)


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


def _totals(page: str, source: str = "inbound") -> dict[str, int]:
    block = page.split(f'<h3 class="h6">{source}</h3>', 1)[1].split("</table>", 1)[0]
    return {
        name: int(total)
        for name, total in re.findall(
            r'<tr class="series-(\w+)"><th>\w+</th><td class="total">(\d+)', block
        )
    }


def test_the_day_counts_accepted_duplicate_rejected_done_and_dead(
    quiet_flusher: None, make_site: Callable[..., Site], redis: Redis
) -> None:
    site = make_site()
    counts = ReceiverCounts(frozenset(["inbound"]))
    _flush(site, counts, first=True)  # no workers' counters yet: they will count from zero
    for event_id, event_type in [
        ("a", "order.created"),
        ("b", "order.created"),
        ("c", "fail.sync"),
    ]:
        site.harness.event(event_id, event_type)
    site.harness.event("a")  # a duplicate
    site.harness.send(b'{"id": "forged"}', secret="wrong")  # rejected
    site.harness.drain()
    _flush(site, counts)
    page = site.get("/events")
    assert _totals(page) == {"accepted": 3, "duplicate": 1, "rejected": 1, "done": 2, "dead": 1}
    # Each bar says its interval and count.
    assert re.search(r"<title>\d\d:\d\d to \d\d:\d\d UTC: 3 accepted</title>", page)
    # Flushing again adds nothing: each count is taken once.
    _flush(site, counts)
    assert _totals(site.get("/events"))["accepted"] == 3


def test_no_secret_appears_on_the_events_pages(site: Site) -> None:
    site.harness.event("evt_fail", "fail.sync")
    site.harness.drain()
    pages = [site.get("/events"), site.get("/events/event", source="inbound", id="evt_fail")]
    for page in pages:
        assert SECRET not in page and AUTH[1] not in page
