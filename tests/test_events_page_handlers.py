"""Requeue and Replay from the event page, for the handlers that have not succeeded or for
all of them; and the same origin guard on each; through Flask's test client against a real
Redis and the real worker, whose handlers count their runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from app.keys import job_id_for
from tests.conftest import AUTH
from tests.events_site import ORIGIN, Site, make_site
from workers import Event, handler
from workers.ops.deadletters import DeadLetters

__all__ = ["make_site"]  # fixtures

EVENT = {"source": "inbound", "id": "evt_two"}
JOB_ID = job_id_for("inbound", "evt_two")
FAILED_ONLY = "Only its handlers that have not succeeded run again."
EVERY_ONE = "Every handler runs again, those that succeeded too."


@pytest.fixture
def two(make_site: Callable[..., Site]) -> Site:
    """A dead letter of two handlers: crm succeeded, mailer failed (no retries)."""
    site = make_site()
    url = site.harness.settings.redis_url

    @handler("inbound", "two.step")
    def crm(event: Event) -> None:
        Redis.from_url(url).incr("runs:crm")

    @handler("inbound", "two.step")
    def mailer(event: Event) -> None:
        Redis.from_url(url).incr("runs:mailer")
        raise RuntimeError("SMTP 451")

    site.harness.event("evt_two", "two.step")
    site.harness.drain()
    assert runs(site) == {"crm": 1, "mailer": 1}
    return site


def runs(site: Site) -> dict[str, int]:
    return {name: int(site.harness.redis.get(f"runs:{name}") or 0) for name in ("crm", "mailer")}


def act(site: Site, path: str, handlers: str, headers: dict[str, str] = ORIGIN) -> Any:
    data = {**EVENT, "handlers": handlers}
    return site.client.post(path, data=data, auth=AUTH, headers=headers)


def logged(caplog: pytest.LogCaptureFixture) -> Any:
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    return line


def test_the_event_page_offers_each_action_for_failed_or_all_handlers(two: Site) -> None:
    page = two.get("/events/event", **EVENT)
    for path, button, label in [
        ("requeue", "requeue", "Requeue failed handlers"),
        ("requeue", "requeue-all", "Requeue, all handlers"),
        ("replay", "replay", "Replay"),
        ("replay", "replay-all", "Replay, all handlers"),
    ]:
        value = "all" if button.endswith("-all") else "failed"
        form = re.search(
            rf'<form method="post" action="/events/{path}"[^>]*>((?:(?!</form>).)*'
            rf'<button id="{button}" type="submit" name="handlers" value="{value}"'
            rf"[^>]*>{label}</button>)",
            page,
            re.S,
        )
        assert form is not None, button
        assert '<input type="hidden" name="id" value="evt_two">' in " ".join(form.group(1).split())


def test_requeue_failed_handlers_reruns_only_the_handler_that_failed(
    two: Site, caplog: pytest.LogCaptureFixture
) -> None:
    response = act(two, "/events/requeue", "failed")
    assert "done=requeued" in response.headers["Location"]
    two.harness.drain()
    assert runs(two) == {"crm": 1, "mailer": 2}
    page = two.get(response.headers["Location"])
    assert f"Requeued with its full retry budget. {FAILED_ONLY}" in page
    assert logged(caplog).all_handlers is False


def test_requeue_all_handlers_reruns_every_handler(
    two: Site, caplog: pytest.LogCaptureFixture
) -> None:
    response = act(two, "/events/requeue", "all")
    assert "done=requeued" in response.headers["Location"]
    two.harness.drain()
    assert runs(two) == {"crm": 2, "mailer": 2}
    page = two.get(response.headers["Location"])
    assert f"Requeued with its full retry budget. {EVERY_ONE}" in page
    assert logged(caplog).all_handlers is True


@pytest.fixture
def purged(two: Site) -> Site:
    """The dead letter purged: a replay enqueues the event again from its record."""
    assert DeadLetters(two.harness.settings, two.harness.redis).purge(JOB_ID)
    return two


def test_replay_reruns_only_the_handlers_that_have_not_succeeded(purged: Site) -> None:
    response = act(purged, "/events/replay", "failed")
    assert "done=enqueued" in response.headers["Location"]
    purged.harness.drain()
    assert runs(purged) == {"crm": 1, "mailer": 2}
    page = purged.get(response.headers["Location"])
    assert f"Enqueued again from the stored payload. {FAILED_ONLY}" in page


def test_replay_all_handlers_reruns_every_handler(purged: Site) -> None:
    response = act(purged, "/events/replay", "all")
    assert "done=enqueued" in response.headers["Location"]
    purged.harness.drain()
    assert runs(purged) == {"crm": 2, "mailer": 2}
    page = purged.get(response.headers["Location"])
    assert f"Enqueued again from the stored payload. {EVERY_ONE}" in page


@pytest.mark.parametrize("path", ["/events/requeue", "/events/replay"])
@pytest.mark.parametrize("handlers", ["failed", "all"])
def test_either_handler_choice_is_refused_from_another_origin(
    two: Site, path: str, handlers: str
) -> None:
    response = act(two, path, handlers, headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    assert two.harness.redis.zscore("rq:failed:webhooks", JOB_ID) is not None
    assert two.harness.redis.llen("rq:queue:webhooks") == 0
