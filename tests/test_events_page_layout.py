"""The Events page as one of rq-dashboard's: its navbar, its instance list, and autorefresh
by a meta refresh that a link switches, with no script and the CSP as it was."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import AUTH
from tests.events_site import Site, make_site, site

__all__ = ["make_site", "site"]  # fixtures

NAV_LINK = re.compile(
    r'<li class="nav-item( active)?">\s*<a href="([^"]*)" class="nav-link"[^>]*>(\w+)</a>'
)
REFRESH = re.compile(r'<meta http-equiv="refresh" content="(\d+)">')
SWITCH = re.compile(r'<a id="autorefresh-switch" href="([^"]*)"[^>]*aria-checked="(\w+)"', re.S)
# The policy as it was before the page had a layout of rq-dashboard's: no script at all.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def nav(page: str) -> dict[str, tuple[str, bool]]:
    """The navbar's links: name -> (href, active)."""
    return {name: (unescape(href), bool(active)) for active, href, name in NAV_LINK.findall(page)}


def switch(page: str) -> tuple[str, dict[str, list[str]], bool]:
    """The autorefresh switch: its link's path and query, and whether it shows on."""
    found = SWITCH.search(page)
    assert found is not None, "no autorefresh switch"
    link = urlsplit(unescape(found.group(1)))
    return link.path, parse_qs(link.query), found.group(2) == "true"


def refresh_seconds(page: str) -> int | None:
    found = REFRESH.search(page)
    return int(found.group(1)) if found else None


def test_the_navbar_has_rq_dashboards_links_with_events_active(site: Site) -> None:
    page = site.get("/events")
    assert '<a class="navbar-brand">RQ-dashboard</a>' in page
    assert nav(page) == {
        "Queues": ("/0/view/queues", False),
        "Jobs": ("/0/view/jobs", False),
        "Workers": ("/0/view/workers", False),
        "Events": ("/events", True),
    }
    # The same places as rq-dashboard's own navbar (as the dashboard edits it) links to.
    theirs = nav(site.get("/0/view/workers"))
    assert {name: href for name, (href, _) in theirs.items()} == {
        name: href for name, (href, _) in nav(page).items()
    }


def test_the_page_uses_rq_dashboards_stylesheet_and_card(site: Site) -> None:
    page = site.get("/events")
    assert 'href="/static/css/main.css"' in page
    assert '<div class="container"><div class="section">' in page
    assert site.client.get("/static/css/main.css", auth=AUTH).status_code == 200


def test_the_one_redis_instance_is_a_disabled_select_of_its_location(site: Site) -> None:
    page = site.get("/events")
    where = site.harness.settings.redis_target.where
    found = re.search(r'<select disabled id="rq-instances"[^>]*>\s*<option selected>([^<]*)<', page)
    assert found is not None
    assert unescape(found.group(1)) == f"[0] {where}"


@pytest.fixture
def instances(site: Site) -> Iterator[Site]:
    config = site.client.application.config
    kept = config["RQ_DASHBOARD_REDIS_URL"]
    config["RQ_DASHBOARD_REDIS_URL"] = (
        "redis://ops:hunter2-secret@10.0.0.1:6379/0",
        "redis://10.0.0.2:6379/1",
    )
    yield site
    config["RQ_DASHBOARD_REDIS_URL"] = kept


def test_several_instances_are_links_to_rq_dashboard_and_never_show_a_password(
    instances: Site,
) -> None:
    page = instances.get("/events")
    assert '<ul id="rq-instances"' in page and '<select disabled id="rq-instances"' not in page
    links = re.findall(r'<a class="nav-link" href="([^"]*)"\s*>([^<]*)</a>', page)
    assert links == [
        ("/0/view/queues", "[0] redis://***:***@10.0.0.1:6379/0"),
        ("/1/view/queues", "[1] redis://10.0.0.2:6379/1"),
    ]
    assert "hunter2" not in page


def test_the_list_reloads_only_when_asked(site: Site) -> None:
    page = site.get("/events")
    assert refresh_seconds(page) is None
    path, query, on = switch(page)
    assert (path, query, on) == ("/events", {"refresh": ["on"]}, False)
    assert "Autorefresh is off here until you turn it on" in page

    page = site.get(path, refresh="on")
    assert refresh_seconds(page) == 10
    assert "This page reloads every 10 s" in page
    assert switch(page) == ("/events", {}, True)  # back to the default: off


def test_the_switch_keeps_the_search_fields(site: Site) -> None:
    fields = {"source": "inbound", "type": "order.*", "status": "dead", "since": "2026-11-30"}
    _, query, _ = switch(site.get("/events", **fields))
    assert query == {**{k: [v] for k, v in fields.items()}, "refresh": ["on"]}
    _, query, _ = switch(site.get("/events", **fields, refresh="on"))
    assert query == {k: [v] for k, v in fields.items()}


def test_the_event_page_reloads_while_pending_until_switched_off(site: Site) -> None:
    site.harness.event("evt_waiting")
    page = site.get("/events/event", source="inbound", id="evt_waiting")
    assert refresh_seconds(page) == 10
    assert "this page reloads every 10 s until it is" in page
    assert '<dd class="col-sm-10" id="settled">- (not yet)</dd>' in page
    path, query, on = switch(page)
    assert (path, on) == ("/events/event", True)
    assert query == {"source": ["inbound"], "id": ["evt_waiting"], "refresh": ["off"]}

    page = site.get(path, source="inbound", id="evt_waiting", refresh="off")
    assert refresh_seconds(page) is None
    assert switch(page)[1] == {"source": ["inbound"], "id": ["evt_waiting"]}


def test_a_settled_event_page_does_not_reload(site: Site) -> None:
    site.harness.event("evt_done")
    site.harness.drain()
    page = site.get("/events/event", source="inbound", id="evt_done")
    assert refresh_seconds(page) is None
    assert switch(page)[2] is False


@pytest.mark.parametrize("refresh", ["on", "off"])
def test_the_policy_still_forbids_every_script(site: Site, refresh: str) -> None:
    site.harness.event("evt_waiting")
    for path, params in (("/events", {}), ("/events/event", {"id": "evt_waiting"})):
        response = site.client.get(
            path, query_string={"source": "inbound", **params, "refresh": refresh}, auth=AUTH
        )
        assert response.headers["Content-Security-Policy"] == CSP
        assert "<script" not in response.get_data(as_text=True)


def test_hostile_search_values_in_the_switchs_link_are_escaped(site: Site) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    page = site.get("/events", type=hostile, id=hostile, refresh="on")
    assert "<img src=x" not in page and "<script>alert" not in page
    _, query, _ = switch(page)
    assert query == {"type": [hostile], "id": [hostile]}
