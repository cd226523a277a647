"""The event page's attempts and handlers: every attempt the ledger record keeps, a row per
handler's turn, and where each handler stands; through Flask's test client against a real
Redis and the real worker."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

from rq.job import Job
from rq.results import Result

from app.keys import job_id_for
from tests.events_site import Site, make_site, site, table
from workers import Event, handler
from workers.ops.deadletters import DeadLetters
from workers.registry import handler_name, registry

__all__ = ["make_site", "site"]  # fixtures

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def event_page(site: Site, event_id: str) -> str:
    return site.get("/events/event", source="inbound", id=event_id)


def fail_handler() -> str:
    """The name of the site's fail.sync handler, as the worker records it."""
    [entry] = registry.handlers_for("inbound", "fail.sync")
    return entry.name


def requeue_and_drain(site: Site, event_id: str) -> None:
    assert DeadLetters(site.harness.settings, site.harness.redis).requeue(
        job_id_for("inbound", event_id)
    )
    site.harness.drain()


def forget_turns(site: Site, event_id: str) -> None:
    """What a record written before per-handler turns holds: no `run:<n>`, no `handlers`."""
    key = f"webhook:event:inbound:{event_id}"
    kept = [f for f in site.harness.redis.hkeys(key) if f.startswith((b"run:", b"handlers"))]
    site.harness.redis.hdel(key, *kept)


def test_an_event_retried_eleven_times_lists_its_twelve_attempts(
    make_site: Callable[..., Site],
) -> None:
    site = make_site(webhook_max_retries=11)
    site.harness.event("evt_12", "fail.sync")
    site.harness.drain()
    page = event_page(site, "evt_12")
    rows = table(page, "attempts")
    assert [row[0] for row in rows] == [str(n) for n in range(1, 13)]
    assert all(ISO_UTC.fullmatch(row[1]) for row in rows)
    error = "RuntimeError: CRM said no to evt_12"
    assert all(row[2:] == [fail_handler(), "failed", error] for row in rows)
    assert 'id="attempts-note"' not in page  # nothing left out


def test_an_event_past_fifty_attempts_lists_the_last_fifty_and_says_five_are_left_out(
    make_site: Callable[..., Site],
) -> None:
    site = make_site(webhook_max_retries=10)  # 11 attempts a round: 55 after four requeues
    site.harness.event("evt_55", "fail.sync")
    site.harness.drain()
    for _ in range(4):
        requeue_and_drain(site, "evt_55")
    page = event_page(site, "evt_55")
    rows = table(page, "attempts")
    # Between them, a one-cell row marks each requeue (`test_events_page_reruns.py`).
    assert [row[0] for row in rows if len(row) > 1] == [str(n) for n in range(6, 56)]
    assert sum(len(row) == 1 for row in rows) == 4
    note = re.search(r'<p id="attempts-note">(.*?)</p>', page, re.S)
    assert note is not None
    assert unescape(note.group(1)) == "5 earlier attempts are not kept: a record keeps the last 50."


def test_two_handlers_one_failing_get_a_row_each_per_attempt_and_say_where_they_stand(
    make_site: Callable[..., Site],
) -> None:
    site = make_site(webhook_max_retries=2)

    @handler("inbound", "two.step")
    def crm(event: Event) -> None:
        pass

    @handler("inbound", "two.step")
    def mailer(event: Event) -> None:
        raise RuntimeError("SMTP 451")

    site.harness.event("evt_two", "two.step")
    site.harness.drain()
    page = event_page(site, "evt_two")
    ok, failing = handler_name(crm), handler_name(mailer)
    assert [[row[0], *row[2:]] for row in table(page, "attempts")] == [
        ["1", ok, "done", ""],
        ["1", failing, "failed", "RuntimeError: SMTP 451"],
        ["2", failing, "failed", "RuntimeError: SMTP 451"],
        ["3", failing, "failed", "RuntimeError: SMTP 451"],
    ]
    assert table(page, "handlers") == [[ok, "done"], [failing, "failed"]]


def test_an_attempt_with_no_turn_gets_one_row_with_its_status(site: Site) -> None:
    site.harness.event("evt_nobody", "nobody.listens")  # no handler: settled as ignored
    site.harness.drain()
    page = event_page(site, "evt_nobody")
    [row] = table(page, "attempts")
    assert [row[0], *row[2:]] == ["1", "-", "ignored", ""]
    assert 'id="handlers"' not in page and "No handler has run for this event." in page


def test_a_record_written_before_turns_were_kept_says_how_many_attempts_rq_lists(
    make_site: Callable[..., Site],
) -> None:
    site = make_site(webhook_max_retries=11)
    site.harness.event("evt_old", "fail.sync")
    site.harness.drain()
    forget_turns(site, "evt_old")
    job = Job.fetch(job_id_for("inbound", "evt_old"), connection=site.harness.redis)
    listed = len(Result.all(job))
    page = event_page(site, "evt_old")
    assert len(table(page, "attempts")) == listed
    note = re.search(r'<p id="attempts-note">(.*?)</p>', page, re.S)
    assert note is not None
    assert unescape(note.group(1)).startswith(
        f"RQ keeps {listed} of this event's 12 attempts, shown newest first:"
    )


def test_attempts_before_turns_were_kept_are_said_not_detailed(
    make_site: Callable[..., Site],
) -> None:
    site = make_site(webhook_max_retries=1)
    site.harness.event("evt_upgraded", "fail.sync")
    site.harness.drain()
    forget_turns(site, "evt_upgraded")  # attempts 1 and 2 ran before the upgrade
    requeue_and_drain(site, "evt_upgraded")
    page = event_page(site, "evt_upgraded")
    assert [row[0] for row in table(page, "attempts")] == ["3", "4"]
    note = re.search(r'<p id="attempts-note">(.*?)</p>', page, re.S)
    assert note is not None
    assert unescape(note.group(1)) == (
        "2 earlier attempts are not detailed: they ended before the record kept each attempt."
    )


def test_hostile_errors_and_handler_names_are_shown_escaped(site: Site) -> None:
    def careless(event: Event) -> None:
        raise ValueError(f"""<script>alert("turn")</script> 'it' {event.payload["note"]}""")

    careless.__qualname__ = '<script>alert("name")</script>'
    handler("inbound", "hostile.turn")(careless)
    site.harness.event("evt_hostile", "hostile.turn", note='"><img src=x onerror=alert(3)>')
    site.harness.drain()
    page = event_page(site, "evt_hostile")
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;turn&#34;)&lt;/script&gt; &#39;it&#39;" in page
    name = handler_name(careless)
    error = """ValueError: <script>alert("turn")</script> 'it' "><img src=x onerror=alert(3)>"""
    assert [row[2:] for row in table(page, "attempts")] == [[name, "failed", error]]
    assert table(page, "handlers") == [[name, "failed"]]
