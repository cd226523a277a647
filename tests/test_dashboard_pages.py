"""rq-dashboard's own pages, as the dashboard serves them: readable metadata, the Events link,
the failed list of the webhook queue labelled as its dead letters."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path

import pytest
import rq_dashboard
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from rq import Queue

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import AUTH, Harness
from workers import Event, handler
from workers.ops.dashboard import create_dashboard
from workers.ops.dashboard_guard import TransformingLoader
from workers.ops.dashboard_pages import TEMPLATE_EDITS, readable_metadata
from workers.registry import handler_name

ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


# What each of TEMPLATE_EDITS (in its order) adds to the page that shows it: text the
# template rq-dashboard ships does not hold.
FAILED_LIST = "/0/view/jobs/webhooks/failed/8/asc/1"
EDIT_MARKS = (
    ("rq_dashboard/job.html", "/0/view/job/{job}", '<pre class="metadata"><%- d.metadata %></pre>'),
    ("rq_dashboard/jobs.html", FAILED_LIST, '<h1 id="dead-letters">Dead letters</h1>'),
    ("rq_dashboard/jobs.html", FAILED_LIST, '<span id="dead-letters-intro">The events of queue'),
    ("rq_dashboard/navbar.html", "/", '<a href="/events" class="nav-link">Events</a>'),
)


def shipped_and_escaped(app: Flask, template: str) -> tuple[str, str, str]:
    """The template as rq-dashboard ships it (its file, as Flask's loader finds it through
    the rq_dashboard blueprint), and as the escaping loader hands it on to the edits."""
    edited = app.jinja_env.loader
    assert isinstance(edited, TransformingLoader)
    escaping = edited.inner
    assert isinstance(escaping, TransformingLoader)
    source, filename, _ = escaping.inner.get_source(app.jinja_env, template)
    escaped, _, _ = escaping.get_source(app.jinja_env, template)
    return source, filename or "", escaped


def test_every_template_edit_has_its_mark_on_a_page() -> None:
    assert [t for t, _, _ in EDIT_MARKS] == [t for t, _, _ in TEMPLATE_EDITS]


@pytest.mark.parametrize(
    ("edit", "mark"), list(zip(TEMPLATE_EDITS, EDIT_MARKS)), ids=[m[2] for m in EDIT_MARKS]
)
def test_each_template_edit_anchors_once_in_rq_dashboards_template_and_shows_on_its_page(
    make_settings: Callable[..., Settings],
    redis: Redis,
    edit: tuple[str, str, str],
    mark: tuple[str, str, str],
) -> None:
    template, pattern, _ = edit
    app = create_dashboard(make_settings())
    source, filename, escaped = shipped_and_escaped(app, template)
    assert Path(filename) == Path(rq_dashboard.__file__).parent / "templates" / template
    # The edits see the escaped text: job.html ships `<%= d.metadata %>`, its anchor
    # reads `<%- d.metadata %>`.
    assert len(re.findall(pattern, escaped)) == 1
    _, page, shown = mark
    assert shown not in source
    job = Queue("other", connection=redis).enqueue_call("tests.e2e_handlers.count")
    response = app.test_client().get(page.format(job=job.id), auth=AUTH)
    assert response.status_code == 200 and shown in response.get_data(as_text=True)


def test_a_dead_letters_metadata_reads_as_lines_with_iso_times(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(webhook_max_retries=0)

    @handler("inbound", "*")
    def boom(event: Event) -> None:
        raise RuntimeError("downstream API answered 502")

    harness.event("evt_2", "demo.flaky")
    harness.drain()
    client = create_dashboard(harness.settings).test_client()
    job_id = job_id_for("inbound", "evt_2")
    metadata = client.get(f"/0/data/job/{job_id}.json", auth=AUTH).get_json()["metadata"]
    lines = {k.strip(): v.strip() for k, v in (x.split(": ", 1) for x in metadata.splitlines())}
    assert re.fullmatch(ISO_UTC, lines.pop("dead at"))
    assert re.fullmatch(ISO_UTC, lines.pop("received at"))
    assert lines == {
        "source": "inbound",
        "type": "demo.flaky",
        "event id": "evt_2",
        "status": "dead",
        "attempts": "1 (retries granted: 0)",
        "requeued": "0 time(s)",
        "last error": f"{handler_name(boom)}: RuntimeError: downstream API answered 502",
        "handlers": f"{handler_name(boom)}: failed",
        "last attempt": f"{handler_name(boom)}: failed (RuntimeError: downstream API answered 502)",
        "settled at": "-",
    }
    assert "prefix" not in metadata and "1796" not in metadata  # no internals, no epochs
    page = client.get(f"/0/view/job/{job_id}", auth=AUTH).get_data(as_text=True)
    assert '<pre class="metadata"><%- d.metadata %></pre>' in page


def test_a_jobs_metadata_says_where_each_handler_stands_and_how_its_last_turn_ended(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(webhook_max_retries=1)

    @handler("inbound", "two.step")
    def crm(event: Event) -> None:
        pass

    @handler("inbound", "two.step")
    def mailer(event: Event) -> None:
        raise RuntimeError(f"SMTP 451 on attempt {event.attempt}")

    harness.event("evt_two", "two.step")
    harness.drain()
    client = create_dashboard(harness.settings).test_client()
    job_id = job_id_for("inbound", "evt_two")
    metadata = client.get(f"/0/data/job/{job_id}.json", auth=AUTH).get_json()["metadata"]
    lines = {k.strip(): v.strip() for k, v in (x.split(": ", 1) for x in metadata.splitlines())}
    ok, failing = handler_name(crm), handler_name(mailer)
    assert lines["handlers"] == f"{ok}: done; {failing}: failed"
    # The second attempt ran only the handler that had not succeeded.
    assert lines["last attempt"] == f"{failing}: failed (RuntimeError: SMTP 451 on attempt 2)"


def _jobs_page(client: FlaskClient, queue: str, registry: str) -> str:
    """rq-dashboard's jobs page for one registry of one queue, as its navigation opens it."""
    response = client.get(f"/0/view/jobs/{queue}/{registry}/8/asc/1", auth=AUTH)
    assert response.status_code == 200
    return response.get_data(as_text=True)


@pytest.mark.parametrize("retries", [5, 1, 0])
def test_the_webhook_queues_failed_list_says_it_holds_dead_letters(
    make_settings: Callable[..., Settings], retries: int
) -> None:
    client = create_dashboard(make_settings(webhook_max_retries=retries)).test_client()
    page = _jobs_page(client, "webhooks", "failed")
    assert '<h1 id="dead-letters">Dead letters</h1>' in page
    intro = re.search(r'<span id="dead-letters-intro">(.*?)</span>', page, re.S)
    assert intro is not None
    text = unescape(re.sub(r"<[^>]+>", "", intro.group(1)))
    budget = {
        5: "its first attempt and 5 retries (WEBHOOK_MAX_RETRIES)",
        1: "its first attempt and 1 retry (WEBHOOK_MAX_RETRIES)",
        0: "its one attempt (WEBHOOK_MAX_RETRIES is 0)",
    }[retries]
    assert text.startswith(
        f"The events of queue webhooks whose retry budget is spent: each failed {budget}, "
        "or raised PermanentError."
    )
    assert "webhooks dead list" in text and "webhooks dead requeue" in text
    assert '<a href="/events?status=dead">Events page</a>' in intro.group(1)
    assert "This list below contains all the queued jobs" not in page


@pytest.mark.parametrize(("queue", "registry"), [("webhooks", "queued"), ("other", "failed")])
def test_other_lists_keep_rq_dashboards_own_sentence(
    make_settings: Callable[..., Settings], queue: str, registry: str
) -> None:
    page = _jobs_page(create_dashboard(make_settings()).test_client(), queue, registry)
    assert "dead-letters" not in page and "Dead letters" not in page
    assert (
        f"This list below contains all the queued jobs on queue <strong>{queue}</strong>." in page
    )


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"note": "x", "tries": 2}, 'note: "x"\ntries: 2'),
        ({}, ""),
    ],
)
def test_other_jobs_metadata_is_one_key_per_line(meta: dict[str, object], expected: str) -> None:
    assert readable_metadata(meta) == expected
