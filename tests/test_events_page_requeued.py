"""An event's page after its requeue: the new run's state (queued, then done), never the
settled time of the run before, and a page that reloads itself until the event settles."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

import pytest

from app.formats import iso
from tests.conftest import AUTH
from tests.events_site import ORIGIN, Site, make_site
from workers import Event, handler

__all__ = ["make_site"]  # fixtures

# Read by the handler in the forked work horse: set before the worker runs.
CRM_UP = {"up": False}


@pytest.fixture
def site(make_site: Callable[..., Site]) -> Site:
    """The site, plus `flaky.sync`: fails until the CRM is up."""
    built = make_site()
    CRM_UP["up"] = False

    @handler("inbound", "flaky.sync")
    def flaky(event: Event) -> None:
        if not CRM_UP["up"]:
            raise RuntimeError("CRM is down")

    return built


def settled(page: str) -> str:
    found = re.search(r'<dd class="col-sm-10" id="settled">(.*?)</dd>', page, re.S)
    assert found is not None
    return unescape(found.group(1))


def status(page: str) -> str:
    found = re.search(r'<span class="status status-[^"]*">([^<]*)</span>', page)
    assert found is not None
    return found.group(1)


def requeued_page(site: Site, event_id: str) -> tuple[str, str]:
    """Requeue a dead letter through the page's button; the page it lands on, and the
    settled time it had as a dead letter."""
    key = f"webhook:event:inbound:{event_id}"
    dead_at = iso(float(site.harness.redis.hget(key, "settled_at") or 0)) or ""
    assert dead_at in settled(site.get("/events/event", source="inbound", id=event_id))
    response = site.client.post(
        "/events/requeue", data={"source": "inbound", "id": event_id}, auth=AUTH, headers=ORIGIN
    )
    assert "done=requeued" in response.headers["Location"]
    return site.get(response.headers["Location"]), dead_at


def test_after_a_requeue_the_page_shows_it_queued_not_its_old_settled_time(site: Site) -> None:
    site.harness.event("evt_flaky", "flaky.sync")
    site.harness.drain()
    page, dead_at = requeued_page(site, "evt_flaky")
    assert status(page) == "queued"
    assert "(queued, in rq-dashboard)" in page
    assert settled(page) != dead_at  # (the same second may be the requeue's: not searched)
    assert re.fullmatch(r"- \(queued again at \S+\+00:00; not settled yet\)", settled(page))
    assert 'id="requeue"' not in page  # not a dead letter any more
    assert '<meta http-equiv="refresh" content="10">' in page


def test_a_requeued_event_page_shows_done_once_the_worker_ran_it(site: Site) -> None:
    site.harness.event("evt_flaky", "flaky.sync")
    site.harness.drain()
    key = "webhook:event:inbound:evt_flaky"
    dead_at = float(site.harness.redis.hget(key, "settled_at") or 0)
    requeued_page(site, "evt_flaky")
    CRM_UP["up"] = True
    site.harness.drain()
    page = site.get("/events/event", source="inbound", id="evt_flaky", done="requeued")
    assert status(page) == "done"
    done_at = float(site.harness.redis.hget(key, "settled_at") or 0)
    assert done_at > dead_at
    assert settled(page) == iso(done_at)
    assert '<meta http-equiv="refresh"' not in page  # settled: nothing left to wait for
