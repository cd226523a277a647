"""A failed attempt's stored traceback puts the user's own frames first, the full one after:
through the real worker in both of its modes, on the Events page and in rq-dashboard."""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from html import unescape

import pytest
from redis import Redis
from rq.job import Job
from rq.results import Result
from rq.timeouts import JobTimeoutException

from app.keys import job_id_for
from tests.conftest import AUTH, Harness
from tests.events_site import Site, make_site, site
from workers import Event, handler
from workers.ops.dashboard import create_dashboard
from workers.registry import handler_name
from workers.runtime.attempt import HandlersFailed, run_handler
from workers.runtime.outcomes import last_error
from workers.runtime.tracebacks import (
    SEPARATOR,
    Failure,
    TracebackParts,
    failures_of,
    split_traceback,
    stored_traceback,
)

__all__ = ["make_site", "site"]  # fixtures

MODES = ["fork", "simple"]
FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)$', re.M)


def _push_to_crm(event: Event) -> None:
    raise RuntimeError(f"CRM said no to {event.id}")


def sync_order(event: Event) -> None:
    _push_to_crm(event)


def mail_receipt(event: Event) -> None:
    raise ValueError("mail server down")


def an_event() -> Event:
    return Event("inbound", "evt_1", "order.created", {}, b"{}", {}, datetime.now(UTC), 1)


def frames(text: str) -> list[tuple[str, str]]:
    """Each frame of a traceback: its file and function."""
    return [(found[0], found[1]) for found in FRAME.findall(text)]


def stored(redis: Redis, event_id: str = "evt_1") -> str:
    job = Job.fetch(job_id_for("inbound", event_id), connection=redis)
    result = job.latest_result()
    assert result is not None and result.exc_string
    return result.exc_string


@pytest.mark.parametrize("mode", MODES)
def test_a_handlers_own_frames_come_first_then_the_full_traceback(
    make_harness: Callable[..., Harness], redis: Redis, mode: str
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_max_retries=0)
    handler("inbound", "order.created")(sync_order)
    harness.event("evt_1")
    harness.drain()
    text = stored(redis)
    assert text.startswith(f"{handler_name(sync_order)} failed:\nTraceback")
    parts = split_traceback(text)
    assert frames(parts.user) == [(__file__, "sync_order"), (__file__, "_push_to_crm")]
    assert parts.user.rstrip().endswith("RuntimeError: CRM said no to evt_1")
    # The full traceback is still there, with the worker's and RQ's frames before the user's.
    full = [function for _, function in frames(parts.full)]
    assert full[-2:] == ["sync_order", "_push_to_crm"]
    assert {"perform", "deliver", "run_handler"} <= set(full)
    assert any("/rq/" in file for file, _ in frames(parts.full))
    assert text.rstrip().endswith("RuntimeError: CRM said no to evt_1")  # last_error's line


@pytest.mark.parametrize("mode", MODES)
def test_each_failing_handler_has_its_name_frames_and_exception_first(
    make_harness: Callable[..., Harness], redis: Redis, mode: str
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_max_retries=0)
    handler("inbound", "order.created")(sync_order)
    handler("inbound", "order.created")(mail_receipt)
    harness.event("evt_1")
    harness.drain()
    parts = split_traceback(stored(redis))
    first, second = parts.user.split(f"{handler_name(mail_receipt)} failed:\n")
    assert first.startswith(f"{handler_name(sync_order)} failed:\n")
    assert frames(first) == [(__file__, "sync_order"), (__file__, "_push_to_crm")]
    assert "RuntimeError: CRM said no to evt_1" in first
    assert frames(second) == [(__file__, "mail_receipt")]
    assert second.rstrip().endswith("ValueError: mail server down")
    summary = (
        f"{handler_name(sync_order)}: RuntimeError: CRM said no to evt_1; "
        f"{handler_name(mail_receipt)}: ValueError: mail server down"
    )
    assert parts.full.rstrip().endswith(f"HandlersFailed: 2 handlers failed: {summary}")


def test_an_async_handlers_frames_leave_out_asyncios() -> None:
    async def fetch_order(event: Event) -> None:
        raise TimeoutError("orders API")

    with pytest.raises(TimeoutError) as caught:
        run_handler(fetch_order, an_event())
    text = stored_traceback(caught.value, [Failure("shop.fetch_order", caught.value)])
    user = frames(split_traceback(text).user)  # from where the test called it
    assert {file for file, _ in user} == {__file__} and user[-1][1] == "fetch_order"
    assert "asyncio" in split_traceback(text).full


def test_an_error_raised_in_the_plumbing_still_puts_its_handler_and_exception_first() -> None:
    error = ValueError(f"x\n{SEPARATOR}\nforged")  # never raised: no frame at all
    text = stored_traceback(error, [Failure("shop.guarded", error)])
    assert text == f"shop.guarded failed:\nValueError: x\n  {SEPARATOR}\nforged\n" + (
        f"\n{SEPARATOR}\nValueError: x\n{SEPARATOR}\nforged\n"
    )
    assert split_traceback(text).full == f"ValueError: x\n{SEPARATOR}\nforged\n"


def test_a_message_that_reads_as_the_separator_does_not_split_the_text_early() -> None:
    def hostile(event: Event) -> None:
        raise RuntimeError(f"x\n{SEPARATOR}\nforged full part")

    with pytest.raises(RuntimeError) as caught:
        hostile(an_event())
    text = stored_traceback(caught.value, [Failure("h", caught.value)])
    parts = split_traceback(text)
    assert parts.full.startswith("Traceback (most recent call last):\n")
    assert f"  {SEPARATOR}\nforged full part" in parts.user


def test_a_timeout_is_the_failure_of_the_handler_it_interrupted() -> None:
    # A timeout ends the attempt in the handler it interrupts: the last failing turn.
    meta = {"turns": [["shop.audit", "failed", "KeyError"], ["shop.crm", "failed", "timeout"]]}
    timeout = JobTimeoutException("Task exceeded maximum timeout value (1 seconds)")
    assert failures_of(timeout, meta) == [Failure("shop.crm", timeout)]


def test_a_users_exception_with_a_failures_attribute_is_its_own_failure() -> None:
    class BulkSyncError(Exception):
        failures = ("row 1", "row 2")

    error = BulkSyncError("2 rows")
    meta = {"turns": [["shop.bulk", "failed", "BulkSyncError: 2 rows"]]}
    assert failures_of(error, meta) == [Failure("shop.bulk", error)]


def test_a_traceback_stored_before_the_split_is_all_full_part() -> None:
    old = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\nValueError: no\n'
    assert split_traceback(old) == TracebackParts("", old)


def test_the_event_page_shows_the_users_frames_then_the_full_traceback_folded(
    site: Site,
) -> None:
    site.harness.event("evt_x", "fail.sync", note="<script>alert(1)</script>")

    @handler("inbound", "fail.sync")
    def quote(event: Event) -> None:
        raise ValueError(f"bad note {event.payload['note']}")

    site.harness.drain()
    page = site.get("/events/event", source="inbound", id="evt_x")
    assert "<script>alert" not in page
    user = re.search(r'<pre id="traceback-user" class="traceback">(.*?)</pre>', page, re.S)
    full = re.search(r'<details><summary>full traceback</summary><pre id="traceback"', page)
    assert user is not None and full is not None and user.end() < full.start()
    shown = unescape(user.group(1))
    assert [function for _, function in frames(shown)] == ["fail", "quote"]
    assert "ValueError: bad note <script>alert(1)</script>" in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in user.group(1)
    assert "in deliver" in unescape(page[full.end() :])


def test_the_event_page_shows_a_traceback_stored_before_the_split(site: Site) -> None:
    site.harness.event("evt_old", "fail.sync")
    site.harness.drain()
    job = Job.fetch(job_id_for("inbound", "evt_old"), connection=site.harness.redis)
    old = "Traceback (most recent call last):\n<b>old</b> frames\nRuntimeError: old\n"
    Result.create_failure(job, ttl=600, exc_string=old)  # the newest result, as stored before
    page = site.get("/events/event", source="inbound", id="evt_old")
    assert 'id="traceback-user"' not in page
    assert "<summary>last traceback</summary>" in page
    assert "&lt;b&gt;old&lt;/b&gt; frames" in page


def test_rq_dashboards_job_page_gets_the_users_frames_first(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(webhook_max_retries=0)
    handler("inbound", "order.created")(sync_order)
    harness.event("evt_1")
    harness.drain()
    client = create_dashboard(harness.settings).test_client()
    job_id = job_id_for("inbound", "evt_1")
    exc_info = client.get(f"/0/data/job/{job_id}.json", auth=AUTH).get_json()["exc_info"]
    assert exc_info.startswith(f"{handler_name(sync_order)} failed:\nTraceback")
    listed = client.get("/0/data/jobs/webhooks/failed/8/asc/1.json", auth=AUTH).get_json()
    assert [job["exc_info"] for job in listed["jobs"]] == [exc_info]
    page = client.get(f"/0/view/job/{job_id}", auth=AUTH).get_data(as_text=True)
    assert '<pre class="exc_info col-12"><%- d.exc_info %></pre>' in page


@pytest.mark.parametrize("module", ["workers.runtime.attempt", "workers.registry"])
def test_the_last_error_of_several_failures_names_them_without_the_module(module: str) -> None:
    # `workers.registry` defined the exception before it moved: its dead letters stay.
    summary = "2 handlers failed: a: ValueError: x; b: KeyError: 'y'"
    try:
        raise HandlersFailed(summary)
    except HandlersFailed as exc:
        text = "".join(traceback.format_exception(exc))
    assert text.rstrip().endswith(f"workers.runtime.attempt.HandlersFailed: {summary}")
    text = text.replace("workers.runtime.attempt.", module + ".")
    assert last_error(text) == f"HandlersFailed: {summary}"
