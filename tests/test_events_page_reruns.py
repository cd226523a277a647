"""An event's page marks, among its attempts, where a requeue or a replay ran it again: from
the Events page, the `webhooks` command or rq-dashboard (who, when, which handlers), and
one made elsewhere (RQ's own requeue: who and when unknown); through Flask's test client
against a real Redis and the real worker, with an id that is hostile markup."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

import pytest
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import AUTH, webhooks
from tests.events_site import ORIGIN, Site, make_site, table

__all__ = ["make_site"]  # fixtures

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
WHEN = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
FAILED_HANDLERS = "the handlers that had not succeeded run again."
Rerun = Callable[[Site, str, str], None]


def post(site: Site, path: str, **fields: str) -> None:
    response = site.client.post(path, data=fields, auth=AUTH, headers=ORIGIN)
    assert response.status_code in (200, 303), response.status_code


def page_requeue(site: Site, event_id: str, handlers: str) -> None:
    post(site, "/events/requeue", source="inbound", id=event_id, handlers=handlers)


def page_replay(site: Site, event_id: str, handlers: str) -> None:
    post(site, "/events/replay", source="inbound", id=event_id, handlers=handlers)


def command_requeue(site: Site, event_id: str, handlers: str) -> None:
    every = ["--all-handlers"] if handlers == "all" else []
    result = webhooks("dead", "requeue", job_id_for("inbound", event_id), *every)
    assert result.exit_code == 0, result.output


def rq_dashboard_requeue(site: Site, event_id: str, handlers: str) -> None:
    post(site, f"/job/{job_id_for('inbound', event_id)}/requeue")


def rq_dashboard_requeue_all(site: Site, event_id: str, handlers: str) -> None:
    post(site, "/requeue/webhooks")


@pytest.fixture
def cli_site(make_site: Callable[..., Site], cli_env: Callable[[Settings], None]) -> Site:
    """The site, with the `webhooks` command pointed at its Redis."""
    site = make_site()
    cli_env(site.harness.settings)
    return site


def attempts(site: Site, event_id: str) -> list[list[str]]:
    page = site.get("/events/event", source="inbound", id=event_id)
    assert "<img src=x" not in page and "<script>alert" not in page
    return table(page, "attempts")


def marks(rows: list[list[str]]) -> list[tuple[int, str]]:
    """Each mark (a one-cell row), with the number of the attempt it follows."""
    found, last = [], 0
    for row in rows:
        if len(row) == 1:
            found.append((last, row[0]))
        else:
            last = int(row[0])
    return found


@pytest.mark.parametrize(
    ("rerun", "how", "handlers", "done_by"),
    [
        (page_requeue, "Requeued from the Events page", "failed", FAILED_HANDLERS),
        (page_requeue, "Requeued from the Events page", "all", "every handler run again."),
        (command_requeue, "Requeued by the webhooks command", "failed", FAILED_HANDLERS),
        (rq_dashboard_requeue, "Requeued from rq-dashboard", "failed", FAILED_HANDLERS),
        (rq_dashboard_requeue_all, "Requeued from rq-dashboard", "failed", FAILED_HANDLERS),
        (page_replay, "Replayed from the Events page", "failed", FAILED_HANDLERS),
    ],
    ids=["page", "page-all", "command", "rq-dashboard", "rq-dashboard-all", "page-replay"],
)
def test_a_requeue_or_replay_is_marked_between_the_attempts_with_who_and_when(
    cli_site: Site, rerun: Rerun, how: str, handlers: str, done_by: str
) -> None:
    cli_site.harness.event(HOSTILE, "fail.sync")
    cli_site.harness.drain()
    rerun(cli_site, HOSTILE, handlers)
    # Marked at once, before the next attempt: the event is queued again.
    [(after, text)] = marks(attempts(cli_site, HOSTILE))
    assert after == 1 and re.fullmatch(rf"↻ {how} at {WHEN}: {re.escape(done_by)}", text)
    cli_site.harness.drain()
    rows = attempts(cli_site, HOSTILE)
    assert [row[0] for row in rows] == ["1", text, "2"]


def test_a_replay_of_a_done_event_is_marked_after_its_done_attempt(cli_site: Site) -> None:
    cli_site.harness.event("evt_done")
    cli_site.harness.drain()
    result = webhooks("replay", "ledger", "inbound", "--since", "0", "--status", "done")
    assert result.exit_code == 0, result.output
    cli_site.harness.drain()
    rows = attempts(cli_site, "evt_done")
    assert [row[0] for row in rows][::2] == ["1", "2"]
    [(after, text)] = marks(rows)
    assert after == 1
    assert re.fullmatch(rf"↻ Replayed by the webhooks command at {WHEN}: {FAILED_HANDLERS}", text)


def test_a_requeue_made_elsewhere_is_marked_without_who_or_when(cli_site: Site) -> None:
    harness = cli_site.harness
    harness.event("evt_rq", "fail.sync")
    harness.drain()
    # RQ's own requeue (`rq requeue`): nothing of ours writes the record.
    FailedJobRegistry("webhooks", connection=harness.redis).requeue(job_id_for("inbound", "evt_rq"))
    harness.drain()
    rows = attempts(cli_site, "evt_rq")
    seen = "↻ Requeued after this attempt (not recorded by whom, nor when)."
    assert [row[0] for row in rows] == ["1", seen, "2"]
    page = cli_site.get("/events/event", source="inbound", id="evt_rq")
    assert re.search(r'<tr class="rerun unrecorded">', page)


def test_attempts_with_no_rerun_between_them_have_no_mark(make_site: Callable[..., Site]) -> None:
    site = make_site(webhook_max_retries=2)  # retried twice by the worker: no operator
    site.harness.event("evt_retried", "fail.sync")
    site.harness.drain()
    rows = attempts(site, "evt_retried")
    assert [row[0] for row in rows] == ["1", "2", "3"] and marks(rows) == []
    assert "rerun" not in unescape(site.get("/events/event", source="inbound", id="evt_retried"))
