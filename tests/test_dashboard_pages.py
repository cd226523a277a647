"""rq-dashboard's own pages, as the dashboard serves them: readable metadata, the Events link."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import AUTH, Harness
from workers import Event, handler
from workers.ops.dashboard import create_dashboard
from workers.ops.dashboard_pages import TEMPLATE_EDITS, readable_metadata
from workers.registry import handler_name

ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


def test_every_template_edit_applies_to_the_installed_rq_dashboard(
    make_settings: Callable[..., Settings],
) -> None:
    # A moved anchor raises TemplateEditMissing when the template loads.
    environment = create_dashboard(make_settings()).jinja_env
    for template, _, _ in TEMPLATE_EDITS:
        assert environment.get_template(template) is not None


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


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"note": "x", "tries": 2}, 'note: "x"\ntries: 2'),
        ({}, ""),
    ],
)
def test_other_jobs_metadata_is_one_key_per_line(meta: dict[str, object], expected: str) -> None:
    assert readable_metadata(meta) == expected
