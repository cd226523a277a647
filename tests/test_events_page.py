"""One event on the Events page, its actions and their guards, through Flask's test client
against a real Redis and the real worker (the chart: tests/test_events_chart.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape

import pytest

from app.keys import job_id_for
from tests.conftest import AUTH, SECRET
from tests.events_site import ORIGIN, Site, make_site, site, table

__all__ = ["make_site", "site"]  # fixtures


def test_the_event_page_shows_headers_payload_attempts_and_the_job(site: Site) -> None:
    site.harness.event("evt_fail", "fail.sync", amount=42, note="second line\nhere")
    site.harness.drain()
    page = site.get("/events/event", source="inbound", id="evt_fail")
    assert '<span class="status status-dead">dead</span>' in page
    assert "RuntimeError: CRM said no to evt_fail" in page
    payload = re.search(r'<pre id="payload" class="payload">(.*?)</pre>', page, re.S)
    assert payload is not None
    assert json.loads(unescape(payload.group(1)))["amount"] == 42
    assert '"amount": 42' in unescape(payload.group(1))  # pretty, one field per line
    job_id = job_id_for("inbound", "evt_fail")
    assert f'href="/0/view/job/{job_id}"' in page
    assert f">{job_id}</a> (failed, in rq-dashboard)" in page
    assert [row[3:] for row in table(page, "attempts")] == [  # its one handler's one turn
        ["failed", "RuntimeError: CRM said no to evt_fail"]
    ]
    assert "Traceback (most recent call last)" in unescape(page)
    assert 'id="requeue"' in page


def test_a_status_written_by_a_newer_version_is_shown_as_it_is(site: Site) -> None:
    site.harness.event("evt_new")
    site.harness.drain()
    site.harness.redis.hset("webhook:event:inbound:evt_new", "status", "archived")
    assert ">archived</span>" in site.get("/events")
    assert ">archived</span>" in site.get("/events", id="evt_new")
    assert ">archived</span>" in site.get("/events/event", source="inbound", id="evt_new")
    assert site.rows(status="done") == []


def test_an_unknown_event_or_source_is_a_404(site: Site) -> None:
    for params in ({"source": "inbound", "id": "nope"}, {"source": "other", "id": "x"}, {}):
        response = site.client.get("/events/event", query_string=params, auth=AUTH)
        assert response.status_code == 404


@pytest.fixture
def dead(site: Site) -> Iterator[tuple[Site, str]]:
    site.harness.event("evt_dead", "fail.sync")
    site.harness.drain()
    yield site, job_id_for("inbound", "evt_dead")


def test_requeue_from_the_event_page_gives_a_full_budget_and_is_logged(
    dead: tuple[Site, str], caplog: pytest.LogCaptureFixture
) -> None:
    site, job_id = dead
    response = site.client.post(
        "/events/requeue", data={"source": "inbound", "id": "evt_dead"}, auth=AUTH, headers=ORIGIN
    )
    assert response.status_code == 303
    assert "done=requeued" in response.headers["Location"]
    assert site.harness.redis.lrange("rq:queue:webhooks", 0, -1) == [job_id.encode()]
    page = site.get(response.headers["Location"])
    assert "Requeued with its full retry budget." in page
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert (line.action, line.event_id, line.outcome, line.count, line.user) == (  # type: ignore[attr-defined]
        "events.requeue",
        "evt_dead",
        "requeued",
        1,
        AUTH[0],
    )


def test_replay_runs_a_done_event_again_from_its_stored_payload(site: Site) -> None:
    site.harness.event("evt_done")
    site.harness.drain()
    key = "webhook:event:inbound:evt_done"
    first = float(site.harness.redis.hget(key, "settled_at") or 0)
    response = site.client.post(
        "/events/replay", data={"source": "inbound", "id": "evt_done"}, auth=AUTH, headers=ORIGIN
    )
    assert "done=enqueued" in response.headers["Location"]
    assert site.harness.redis.hget(key, "status") == b"queued"
    site.harness.drain()
    assert site.harness.redis.hget(key, "status") == b"done"
    assert float(site.harness.redis.hget(key, "settled_at") or 0) > first


def test_an_event_whose_payload_is_stored_nowhere_is_not_replayed(site: Site) -> None:
    site.harness.event("evt_gone")
    site.harness.drain()
    redis = site.harness.redis
    redis.delete("rq:job:" + job_id_for("inbound", "evt_gone"))
    redis.hdel("webhook:event:inbound:evt_gone", "payload")
    response = site.client.post(
        "/events/replay", data={"source": "inbound", "id": "evt_gone"}, auth=AUTH, headers=ORIGIN
    )
    assert "done=no-payload" in response.headers["Location"]
    assert redis.llen("rq:queue:webhooks") == 0
    assert "Not replayed: its payload is stored nowhere any more" in site.get(
        response.headers["Location"]
    )


def test_a_pending_event_is_not_replayed(site: Site) -> None:
    site.harness.event("evt_waiting")
    page = site.get("/events/event", source="inbound", id="evt_waiting")
    assert 'id="replay"' not in page
    response = site.client.post(
        "/events/replay", data={"source": "inbound", "id": "evt_waiting"}, auth=AUTH, headers=ORIGIN
    )
    assert "done=pending" in response.headers["Location"]
    assert site.harness.redis.llen("rq:queue:webhooks") == 1


@pytest.mark.parametrize("path", ["/events/requeue", "/events/replay"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://evil.example"},
        {"Referer": "http://evil.example/"},
        {"Origin": "null"},
    ],
    ids=["no-origin", "foreign-origin", "foreign-referer", "null-origin"],
)
def test_actions_refuse_other_origins(
    dead: tuple[Site, str], path: str, headers: dict[str, str]
) -> None:
    site, job_id = dead
    data = {"source": "inbound", "id": "evt_dead"}
    response = site.client.post(path, data=data, auth=AUTH, headers=headers)
    assert response.status_code == 403
    assert site.harness.redis.zscore("rq:failed:webhooks", job_id) is not None


@pytest.mark.parametrize("path", ["/events/requeue", "/events/replay"])
def test_actions_do_not_answer_get(dead: tuple[Site, str], path: str) -> None:
    site, job_id = dead
    query = {"source": "inbound", "id": "evt_dead"}
    response = site.client.get(path, query_string=query, auth=AUTH, headers=ORIGIN)
    assert response.status_code == 405
    assert site.harness.redis.zscore("rq:failed:webhooks", job_id) is not None


def test_pages_forbid_scripts_and_framing(site: Site) -> None:
    response = site.client.get("/events", auth=AUTH)
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert "script-src" not in policy  # none at all: default-src 'none' covers it
    assert "frame-ancestors 'none'" in policy
    assert "<script" not in response.get_data(as_text=True)


def test_hostile_ids_types_and_errors_are_escaped(site: Site) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    site.harness.event(hostile, "fail.sync")
    site.harness.drain()
    for page in (site.get("/events"), site.get("/events/event", source="inbound", id=hostile)):
        assert "<img src=x" not in page and "<script>alert" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_no_secret_appears_on_the_events_pages(site: Site) -> None:
    site.harness.event("evt_fail", "fail.sync")
    site.harness.drain()
    pages = [site.get("/events"), site.get("/events/event", source="inbound", id="evt_fail")]
    for page in pages:
        assert SECRET not in page and AUTH[1] not in page


def test_a_payload_holding_a_lone_surrogate_escape_is_shown_not_a_500(site: Site) -> None:
    # Valid JSON (`"\ud800"`), in a field no signature covers: the page must still render.
    site.harness.event("evt_odd", "fail.sync", note="\ud800")
    site.harness.drain()
    page = site.get("/events/event", source="inbound", id="evt_odd")
    assert "\\ud800" in unescape(page)
