"""Bulk requeue and purge of the dead letters a search of the Events page matches: the
buttons, the confirmation (a dry run grouped by error), and the POSTs that act on exactly
the letters it listed that still match, through Flask's test client against a real Redis
and the real worker."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from redis import Redis
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from tests.conftest import AUTH, event_body
from tests.events_site import ORIGIN, Site, ids_of, make_site, table
from tests.purge_race import (
    EVENT_ID,
    EVENT_TYPE,
    JOB_ID,
    assert_requeued_and_runs_once,
    flaky_handler,
    requeued_before_the_purge_writes,
)
from workers import Event, handler
from workers.ops.deadletters import DeadLetters
from workers.ops.events_page import search

__all__ = ["make_site"]  # fixtures

CRM_SECRET = "crm-secret-0123456789"
HIDDEN = re.compile(r'<input type="hidden" name="([^"]*)" value="([^"]*)">')


@dataclass
class Letters:
    """Dead letters of two sources and two types, one received before the search's time
    range; the search (`inbound`, `fail.*`, since evt_f1) matches evt_f1 and evt_f2."""

    site: Site
    search: dict[str, str]

    @property
    def redis(self) -> Redis:
        return self.site.harness.redis

    def dead(self) -> set[str]:
        ids = FailedJobRegistry("webhooks", connection=self.redis).get_job_ids()
        return {str(i) for i in ids}

    def queued(self) -> set[str]:
        return {i.decode() for i in self.redis.lrange("rq:queue:webhooks", 0, -1)}

    def fail(self, event_id: str, event_type: str = "fail.sync") -> None:
        """One more dead letter of `inbound`."""
        assert self.site.harness.event(event_id, event_type).status_code == 200
        self.site.harness.drain()

    def confirm(self, verb: str, **search: str) -> tuple[str, str, dict[str, str]]:
        """The confirmation page, where its form posts, and its fields."""
        page = self.site.get("/events/bulk", verb=verb, **(search or self.search))
        action = re.search(r'<form method="post" action="([^"]*)"', page)
        fields = {name: unescape(value) for name, value in HIDDEN.findall(page)}
        return page, (unescape(action.group(1)) if action else ""), fields

    def post(self, path: str, fields: dict[str, str], headers: dict[str, str] = ORIGIN) -> str:
        response = self.site.client.post(path, data=fields, auth=AUTH, headers=headers)
        assert response.status_code == 303, response.status_code
        return str(response.headers["Location"])


def inbound(event_id: str) -> str:
    return job_id_for("inbound", event_id)


@pytest.fixture
def letters(make_site: Callable[..., Site]) -> Letters:
    site = make_site(
        webhook_sources="inbound:hmac,crm:hmac", per_source={"WEBHOOK_SECRET_CRM": CRM_SECRET}
    )

    @handler("crm", "*")
    def crm_fails(event: Event) -> None:
        raise RuntimeError("CRM said no")

    harness = site.harness
    for event_id, event_type in [
        ("evt_old", "fail.sync"),
        ("evt_f1", "fail.sync"),
        ("evt_b1", "bad.input"),
        ("evt_f2", "fail.sync"),
        ("evt_b2", "bad.input"),
        ("evt_ok", "order.created"),
    ]:
        assert harness.event(event_id, event_type).status_code == 200
    assert harness.send(event_body("evt_c1", "fail.sync"), CRM_SECRET, "crm").status_code == 200
    harness.drain()
    since = harness.redis.zscore("webhook:events", "webhook:event:inbound:evt_f1")
    assert since is not None
    found = Letters(site, {"source": "inbound", "type": "fail.*", "since": repr(since)})
    assert len(found.dead()) == 6
    return found


def test_a_search_offers_to_requeue_or_purge_its_dead_letters_on_every_page(
    letters: Letters, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "PAGE", 2)
    page = letters.site.get("/events", type="fail.*")
    assert len(table(page, "events")) == 2  # one page shows two of the four
    assert "4 dead letters match this search, on every page" in page
    assert ">Requeue these\n  4</a>" in page and ">Purge these\n  4</a>" in page
    links = dict(re.findall(r'id="bulk-(requeue|purge)"[^>]*href="([^"]*)"', page))
    assert unescape(links["requeue"]) == "/events/bulk?verb=requeue&type=fail.*"
    assert unescape(links["purge"]) == "/events/bulk?verb=purge&type=fail.*"


@pytest.mark.parametrize(
    "params", [{"status": "done"}, {"type": "order.created"}, {"since": "soon"}]
)
def test_no_bulk_buttons_when_the_search_matches_no_dead_letter_or_has_a_bad_field(
    letters: Letters, params: dict[str, str]
) -> None:
    # A bad field is left out of the search: a bulk action would take more than asked.
    assert 'id="bulk-requeue"' not in letters.site.get("/events", **params)


def test_the_confirmation_counts_and_groups_by_error_and_changes_nothing(
    letters: Letters,
) -> None:
    before = letters.dead()
    page, action, fields = letters.confirm("requeue", type="*")
    assert "6 dead letters match this search." in page and "Nothing has changed yet." in page
    # Each error without the handler's name that starts it.
    groups = [[c, e.split(": ", 1)[1], s, t] for c, e, s, t, *_ in table(page, "groups")]
    assert groups[0] == ["2", "PermanentError: cannot be processed", "inbound", "bad.input"]
    assert sorted(groups[1:]) == [["1", "RuntimeError: CRM said no", "crm", "fail.sync"]] + [
        ["1", f"RuntimeError: CRM said no to {event_id}", "inbound", "fail.sync"]
        for event_id in ("evt_f1", "evt_f2", "evt_old")
    ]
    assert action == "/events/bulk/requeue"
    assert fields["type"] == "*"
    assert set(fields["jobs"].split()) == before
    assert 'value="failed"' in page and 'value="all"' in page  # the handlers' choice
    assert letters.dead() == before and letters.queued() == set()


def test_the_requeue_moves_exactly_the_matched_dead_letters(letters: Letters) -> None:
    _, action, fields = letters.confirm("requeue")
    assert set(fields["jobs"].split()) == {inbound("evt_f1"), inbound("evt_f2")}
    letters.fail("evt_f3")  # matches the search, but failed after the confirmation
    location = letters.post(action, {**fields, "handlers": "failed"})
    assert letters.queued() == {inbound("evt_f1"), inbound("evt_f2")}
    assert letters.dead() == {inbound(i) for i in ("evt_old", "evt_b1", "evt_b2", "evt_f3")} | {
        job_id_for("crm", "evt_c1")
    }
    assert "2 requeued." in letters.site.get(location)
    assert "source=inbound" in location and "type=fail.*" in unescape(location)


def test_a_letter_requeued_meanwhile_is_counted_as_skipped(letters: Letters) -> None:
    _, action, fields = letters.confirm("requeue")
    assert DeadLetters(letters.site.harness.settings, letters.redis).requeue(inbound("evt_f1"))
    location = letters.post(action, {**fields, "handlers": "failed"})
    page = letters.site.get(location)
    done = re.search(r'<div id="bulk-done"[^>]*>([^<]*)</div>', page)
    assert done is not None and done.group(1) == "1 requeued, 1 skipped: no longer a dead letter."


def test_listed_letters_outside_the_search_are_not_touched(letters: Letters) -> None:
    # A form that lists every dead letter under a narrower search: only those it matches.
    _, action, fields = letters.confirm("requeue")
    location = letters.post(action, {**fields, "jobs": " ".join(sorted(letters.dead()))})
    assert letters.queued() == {inbound("evt_f1"), inbound("evt_f2")}
    assert "2 requeued, 4 skipped: no longer matching the search." in letters.site.get(location)


def test_the_bulk_action_is_logged_with_the_user_the_filters_and_the_counts(
    letters: Letters, caplog: pytest.LogCaptureFixture
) -> None:
    _, action, fields = letters.confirm("requeue")
    letters.post(action, {**fields, "handlers": "all"})
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    logged = {
        name: getattr(line, name)
        for name in ("action", "user", "filters", "requeued", "skipped", "all_handlers")
    }
    assert logged == {
        "action": "events.bulk_requeue",
        "user": AUTH[0],
        "filters": letters.search,
        "requeued": 2,
        "skipped": 0,
        "all_handlers": True,
    }


def test_purge_deletes_exactly_the_matched_and_their_ids_stay_claimed(letters: Letters) -> None:
    page, action, fields = letters.confirm("purge")
    assert "Its event id stays claimed" in page
    location = letters.post(action, fields)
    assert "2 purged." in letters.site.get(location)
    assert len(letters.dead()) == 4 and not letters.dead() & {inbound("evt_f1"), inbound("evt_f2")}
    assert letters.redis.exists("rq:job:" + inbound("evt_f1")) == 0
    again = letters.site.harness.event("evt_f1", "fail.sync").json()
    assert again["status"] == "duplicate"


@pytest.mark.parametrize("path", ["/events/bulk/requeue", "/events/bulk/purge"])
@pytest.mark.parametrize(
    "headers",
    [{}, {"Origin": "http://evil.example"}, {"Referer": "http://evil.example/"}],
    ids=["no-origin", "foreign-origin", "foreign-referer"],
)
def test_bulk_actions_refuse_other_origins(
    letters: Letters, path: str, headers: dict[str, str]
) -> None:
    _, _, fields = letters.confirm("requeue")
    response = letters.site.client.post(path, data=fields, auth=AUTH, headers=headers)
    assert response.status_code == 403
    assert len(letters.dead()) == 6


@pytest.mark.parametrize("path", ["/events/bulk/requeue", "/events/bulk/purge"])
def test_bulk_actions_do_not_answer_get(letters: Letters, path: str) -> None:
    _, _, fields = letters.confirm("requeue")
    response = letters.site.client.get(path, query_string=fields, auth=AUTH, headers=ORIGIN)
    assert response.status_code == 405
    assert len(letters.dead()) == 6


def test_hostile_errors_ids_and_filters_are_escaped_on_the_confirmation(
    letters: Letters,
) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    letters.fail(hostile)
    for params in ({"id": hostile}, {"type": hostile + "*"}, {}):
        page, _, _ = letters.confirm("requeue", **params)
        assert "<img src=x" not in page and "<script>alert" not in page
    page, _, fields = letters.confirm("requeue", id=hostile)
    assert "1 dead letter matches this search." in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert fields["id"] == hostile and fields["jobs"] == inbound(hostile)


def test_a_result_sentence_is_made_of_counts_only(letters: Letters) -> None:
    page = letters.site.get("/events", bulk="requeue", done="<i>9", gone="1", unmatched="0")
    assert 'id="bulk-done"' not in page and "<i>9" not in page
    page = letters.site.get("/events", bulk="requeue", done="9", gone="1", unmatched="0")
    assert "9 requeued, 1 skipped: no longer a dead letter." in page


def test_a_purge_skips_a_letter_requeued_between_its_check_and_its_delete(
    letters: Letters, tmp_path: Path
) -> None:
    state = flaky_handler(tmp_path)
    letters.fail(EVENT_ID, EVENT_TYPE)
    _, action, fields = letters.confirm("purge")
    assert set(fields["jobs"].split()) == {inbound("evt_f1"), inbound("evt_f2"), JOB_ID}
    with requeued_before_the_purge_writes(letters.site.harness.settings):
        location = letters.post(action, fields)
    page = letters.site.get(location)
    done = re.search(r'<div id="bulk-done"[^>]*>([^<]*)</div>', page)
    assert done is not None and done.group(1) == "2 purged, 1 skipped: no longer a dead letter."
    assert not letters.dead() & {inbound("evt_f1"), inbound("evt_f2"), JOB_ID}
    assert_requeued_and_runs_once(letters.redis, state, letters.site.harness.drain)


def test_a_bulk_requeues_result_is_first_on_the_page_with_a_link_to_the_requeued_events(
    letters: Letters,
) -> None:
    _, action, fields = letters.confirm("requeue", **{**letters.search, "status": "dead"})
    page = letters.site.get(letters.post(action, {**fields, "handlers": "failed"}))
    # Before the picture and the search, whose `status=dead` no longer shows them.
    assert page.index('id="bulk-done"') < page.index('id="now"') < page.index('id="summary"')
    assert "0 events shown." in page
    link = re.search(r'<a id="bulk-requeued" href="([^"]*)">([^<]*)</a>', page)
    assert link is not None
    assert " ".join(unescape(link.group(2)).split()) == "Show the 2 requeued events →"
    listed = letters.site.get(unescape(link.group(1)))
    assert sorted(ids_of(listed)) == ["evt_f1", "evt_f2"]
    assert 'id="requeued-only"' in listed and "Only the 2 events" in listed
    # Whatever they became: once run (dead again here), the same link still lists them.
    letters.site.harness.drain()
    assert sorted(ids_of(letters.site.get(unescape(link.group(1))))) == ["evt_f1", "evt_f2"]


def test_the_requeued_events_search_keeps_its_other_filters_and_bulk_acts_within_it(
    letters: Letters,
) -> None:
    _, action, fields = letters.confirm("requeue", type="*", source="inbound")
    assert len(fields["jobs"].split()) == 5
    page = letters.site.get(letters.post(action, {**fields, "handlers": "failed"}))
    link = re.search(r'<a id="bulk-requeued" href="([^"]*)"', page)
    assert link is not None
    token = parse_qs(urlsplit(unescape(link.group(1))).query)["requeued"][0]
    letters.site.harness.drain()  # every one dead again: its handler still fails
    letters.fail("evt_f9")  # a dead letter of the same search, not of this requeue
    within = {"requeued": token, "type": "bad.*", "status": "dead"}
    assert sorted(letters.site.rows(**within)) == ["evt_b1", "evt_b2"]
    assert "2 dead letters match this search" in letters.site.get("/events", **within)
    _, _, fields = letters.confirm("requeue", requeued=token, status="dead")
    assert set(fields["jobs"].split()) == {inbound(i) for i in ("evt_old", "evt_f1", "evt_f2")} | {
        inbound("evt_b1"),
        inbound("evt_b2"),
    }
    assert fields["requeued"] == token


def test_a_purges_result_is_first_on_the_page_without_a_link(letters: Letters) -> None:
    _, action, fields = letters.confirm("purge")
    page = letters.site.get(letters.post(action, fields))
    assert page.index('id="bulk-done"') < page.index('id="now"')
    assert "2 purged." in page and 'id="bulk-requeued"' not in page


@pytest.mark.parametrize("token", ["x" * 15 + "!", '"><script>alert(1)</script>'])
def test_a_requeued_list_the_page_did_not_make_is_left_out_of_the_search_and_never_linked(
    letters: Letters, token: str
) -> None:
    page = letters.site.get("/events", requeued=token, status="dead")
    assert "That list of requeued events is not one this page made." in page
    assert "<script>alert" not in page and 'id="bulk-requeue"' not in page
    banner = letters.site.get("/events", bulk="requeue", done="2", batch=token)
    assert "2 requeued." in banner and 'id="bulk-requeued"' not in banner


def test_a_requeued_list_no_longer_kept_shows_no_event_and_says_so(letters: Letters) -> None:
    page = letters.site.get("/events", requeued="A" * 16)
    assert "That list of requeued events is no longer kept (a week)." in page
    assert ids_of(page) == [] and 'id="bulk-requeue"' not in page


def test_hostile_ids_in_the_requeued_events_list_are_escaped(letters: Letters) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    letters.fail(hostile)
    _, action, fields = letters.confirm("requeue", id=hostile)
    page = letters.site.get(letters.post(action, {**fields, "handlers": "failed"}))
    link = re.search(r'<a id="bulk-requeued" href="([^"]*)"', page)
    assert link is not None
    listed = letters.site.get(unescape(link.group(1)))
    assert ids_of(listed) == [hostile]
    assert "<img src=x" not in listed and "<script>alert" not in listed
