"""The Events page's search, through Flask's test client against a real Redis and the real
worker: by id, source, type, status and time, newest first, paged, within a budget."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.conftest import AUTH
from tests.events_site import Site, ids_of, make_site, site
from workers.ops.events_page import search

__all__ = ["make_site", "site"]  # fixtures


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


def test_an_id_with_surrounding_spaces_finds_that_event_not_its_stripped_twin(
    site: Site,
) -> None:
    # Ids are printable text, spaces included: ` evt_1 ` is another event than `evt_1`.
    for event_id in ("evt_1", " evt_1 "):
        assert site.harness.event(event_id).json()["status"] == "accepted"
    assert site.rows(id=" evt_1 ") == [" evt_1 "]
    assert site.rows(id="evt_1") == ["evt_1"]


def test_an_id_pasted_with_a_newline_falls_back_to_the_stripped_id_and_says_so(
    site: Site,
) -> None:
    site.harness.event("evt_7")
    page = site.get("/events", id="evt_7\n")
    assert ids_of(page) == ["evt_7"]
    assert "No event has exactly that id" in page
    assert "without the spaces or line breaks around it" in page


def test_an_exact_match_is_shown_without_the_fallback_label(site: Site) -> None:
    site.harness.event("evt_7")
    assert "No event has exactly that id" not in site.get("/events", id="evt_7")


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


def test_a_time_or_position_that_is_not_a_number_is_refused_not_a_500(site: Site) -> None:
    site.harness.event("evt_a")
    for name in ("since", "until"):
        for value in ("nan", "inf", "-Infinity"):
            page = site.get("/events", **{name: value})
            assert f"{name}: expected ISO 8601" in page
            assert site.rows(**{name: value}) == ["evt_a"]  # the bad field is left out
    # A position this page never writes is ignored, like any other: the newest page.
    assert site.rows(after="nan:x") == site.rows(after="inf:x") == ["evt_a"]


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
        seen += ids_of(page)
        older = re.search(r'<a id="older" href="([^"]*)"', page)
        if older is None:
            break
        params = {"after": dict(_query(unescape(older.group(1))))["after"]}
    assert seen == ids[::-1]


def _query(url: str) -> list[tuple[str, str]]:
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


def test_the_queue_now_shows_depth_and_the_oldest_wait(site: Site) -> None:
    site.harness.event("evt_a")
    site.harness.event("evt_b")
    page = site.get("/events")
    assert "<b>2</b> queued" in page
    assert re.search(r"oldest queued: <b>\d+ s</b>", page)
