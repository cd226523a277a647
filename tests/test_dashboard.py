"""The dashboard launcher: a login always, escaped pages, and actions only from its own pages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from jinja2 import DictLoader, Environment
from redis import Redis

from app.keys import job_id_for
from app.settings import ConfigError, Settings
from tests.conftest import AUTH, Harness
from tests.purge_race import (
    EVENT_ID,
    EVENT_TYPE,
    JOB_ID,
    Flaky,
    assert_requeued_and_runs_once,
    flaky_handler,
    requeued_before_the_purge_writes,
)
from workers import Event, handler
from workers.ops.dashboard import create_dashboard
from workers.ops.dashboard_guard import (
    TransformingLoader,
    action_endpoints,
    escape_interpolations,
    escape_rq_dashboard,
)
from workers.ops.events_page.views import ACTIONS as EVENT_ACTIONS


@pytest.mark.parametrize("missing", ["rq_dashboard_username", "rq_dashboard_password"])
def test_the_dashboard_refuses_to_start_without_credentials(
    make_settings: Callable[..., Settings], missing: str
) -> None:
    with pytest.raises(ConfigError, match="RQ_DASHBOARD_USERNAME and RQ_DASHBOARD_PASSWORD"):
        create_dashboard(make_settings(**{missing: None}))


def test_the_dashboard_refuses_a_password_a_distributed_guesser_could_reach(
    make_settings: Callable[..., Settings],
) -> None:
    # The attacker's side: the brake slows each address, not a guesser with thousands.
    with pytest.raises(ConfigError, match="at least 16 characters") as raised:
        create_dashboard(make_settings(rq_dashboard_password="hunter2-short"))
    assert "hunter2-short" not in str(raised.value)


@pytest.mark.parametrize("auth", [None, (AUTH[0], "wrong"), ("other", AUTH[1]), ("", "")])
def test_every_page_needs_the_login(
    make_settings: Callable[..., Settings], redis: Redis, auth: tuple[str, str] | None
) -> None:
    client = create_dashboard(make_settings()).test_client()
    for path in ("/", "/0/data/queues.json", "/requeue/webhooks"):
        response = client.get(path, auth=auth)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_the_login_opens_the_dashboard(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    client = create_dashboard(make_settings()).test_client()
    assert client.get("/", auth=AUTH).status_code == 200


# --- actions: POST only, same origin only, nothing that has not run can be deleted -------

ORIGIN = {"Origin": "http://localhost"}
ACTIONS = {
    "rq_dashboard.delete_job_view": "/job/{job}/delete",
    "rq_dashboard.requeue_job_view": "/job/{job}/requeue",
    "rq_dashboard.requeue_all": "/requeue/webhooks",
    "rq_dashboard.empty_queue": "/queue/webhooks/failed/empty",
    "rq_dashboard.compact_queue": "/queue/webhooks/compact",
}


@pytest.fixture
def one_dead(make_harness: Callable[..., Harness]) -> tuple[Harness, str]:
    harness = make_harness(webhook_max_retries=0)

    @handler("inbound", "*")
    def boom(event: Event) -> None:
        raise RuntimeError("down")

    harness.event("evt_dead")
    harness.drain()
    return harness, job_id_for("inbound", "evt_dead")


def failed_ids(redis: Redis) -> list[bytes]:
    return list(redis.zrange("rq:failed:webhooks", 0, -1))


def test_the_guarded_actions_are_every_route_that_accepts_post(
    make_settings: Callable[..., Settings],
) -> None:
    # An rq-dashboard upgrade that adds an action must be looked at: it is guarded anyway
    # (every POST route is), but the test names what is known. The Events page's actions
    # are tested in tests/test_events_page.py.
    assert action_endpoints(create_dashboard(make_settings())) == set(ACTIONS) | EVENT_ACTIONS


@pytest.mark.parametrize("endpoint", sorted(ACTIONS))
def test_no_action_answers_get(one_dead: tuple[Harness, str], endpoint: str) -> None:
    harness, job_id = one_dead
    client = create_dashboard(harness.settings).test_client()
    response = client.get(ACTIONS[endpoint].format(job=job_id), auth=AUTH, headers=ORIGIN)
    assert response.status_code == 405
    assert failed_ids(harness.redis) == [job_id.encode()]


@pytest.mark.parametrize("endpoint", sorted(ACTIONS))
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://evil.example"},
        {"Referer": "http://evil.example/page"},
        {"Origin": "null"},
    ],
    ids=["no-origin", "foreign-origin", "foreign-referer", "null-origin"],
)
def test_no_action_is_taken_from_another_origin(
    one_dead: tuple[Harness, str], endpoint: str, headers: dict[str, str]
) -> None:
    harness, job_id = one_dead
    client = create_dashboard(harness.settings).test_client()
    response = client.post(ACTIONS[endpoint].format(job=job_id), auth=AUTH, headers=headers)
    assert response.status_code == 403
    assert failed_ids(harness.redis) == [job_id.encode()]


def test_a_same_origin_requeue_works_and_is_logged(
    one_dead: tuple[Harness, str], caplog: pytest.LogCaptureFixture
) -> None:
    harness, job_id = one_dead
    client = create_dashboard(harness.settings).test_client()
    response = client.post(
        f"/job/{job_id}/requeue", auth=AUTH, headers={"Referer": "http://localhost/0/view/jobs"}
    )
    assert response.status_code == 200
    assert failed_ids(harness.redis) == []
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert (line.action, line.job_id, line.count, line.user) == ("requeue", job_id, 1, "ops")  # type: ignore[attr-defined]


def test_emptying_the_dead_letters_is_logged_with_its_count(
    one_dead: tuple[Harness, str], caplog: pytest.LogCaptureFixture
) -> None:
    harness, _ = one_dead
    client = create_dashboard(harness.settings).test_client()
    response = client.post("/queue/webhooks/failed/empty", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 200 and failed_ids(harness.redis) == []
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert (line.action, line.registry, line.count) == ("empty", "failed", 1)  # type: ignore[attr-defined]


@pytest.mark.parametrize("registry", ["queued", "started", "scheduled", "deferred"])
def test_events_that_have_not_run_cannot_be_emptied_from_the_dashboard(
    make_harness: Callable[..., Harness], registry: str
) -> None:
    harness = make_harness()
    harness.event("evt_waiting")
    client = create_dashboard(harness.settings).test_client()
    response = client.post(f"/queue/webhooks/{registry}/empty", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 403
    assert harness.redis.lrange("rq:queue:webhooks", 0, -1) == [
        job_id_for("inbound", "evt_waiting").encode()
    ]


def test_a_queued_event_cannot_be_deleted_from_the_dashboard(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness()
    harness.event("evt_waiting")
    job_id = job_id_for("inbound", "evt_waiting")
    client = create_dashboard(harness.settings).test_client()
    assert client.post(f"/job/{job_id}/delete", auth=AUTH, headers=ORIGIN).status_code == 403
    assert harness.redis.exists(f"rq:job:{job_id}") == 1


def test_a_dead_letter_can_be_deleted_from_the_dashboard(one_dead: tuple[Harness, str]) -> None:
    harness, job_id = one_dead
    client = create_dashboard(harness.settings).test_client()
    assert client.post(f"/job/{job_id}/delete", auth=AUTH, headers=ORIGIN).status_code == 200
    assert harness.redis.exists(f"rq:job:{job_id}") == 0


# --- escaping ----------------------------------------------------------------------------


def rq_dashboard_templates() -> dict[str, str]:
    import rq_dashboard

    root = Path(rq_dashboard.__file__).parent / "templates"
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_every_underscore_interpolation_of_rq_dashboard_is_escaped() -> None:
    templates = rq_dashboard_templates()
    rewritten = {name: escape_interpolations(text) for name, text in templates.items()}
    assert not [name for name, text in rewritten.items() if "<%=" in text]
    # The two hand-escaped places are unwrapped, not escaped twice.
    assert sum(t.count("$('<div/>').text(") for t in templates.values()) == 2
    assert not [name for name, text in rewritten.items() if "$('<div/>').text(" in text]


def test_the_dashboard_serves_its_templates_escaped(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    client = create_dashboard(make_settings()).test_client()
    page = client.get("/0/view/workers", auth=AUTH).get_data(as_text=True)
    assert "<%- d.current_job.call_string %>" in page and "<%=" not in page


def test_one_loader_transforms_the_templates_it_wraps_by_name() -> None:
    inner = DictLoader({"rq_dashboard/a.html": "<%= x %>", "events/b.html": "<%= x %>"})
    seen: list[str] = []

    def upper(name: str, source: str) -> str:
        seen.append(name)
        return source.upper()

    loader = TransformingLoader(TransformingLoader(inner, escape_rq_dashboard), upper)
    environment = Environment(loader=loader)
    assert environment.get_template("rq_dashboard/a.html").render() == "<%- X %>"
    assert environment.get_template("events/b.html").render() == "<%= X %>"
    assert seen == ["rq_dashboard/a.html", "events/b.html"]
    assert loader.list_templates() == inner.list_templates()


# --- deleting dead letters: only what is still one, in the same atomic step -------------


@pytest.fixture
def raced_letter(make_harness: Callable[..., Harness], tmp_path: Path) -> tuple[Harness, Flaky]:
    harness = make_harness(webhook_max_retries=0)
    state = flaky_handler(tmp_path)
    assert harness.event(EVENT_ID, EVENT_TYPE).status_code == 200
    harness.drain()
    assert failed_ids(harness.redis) == [JOB_ID.encode()]
    return harness, state


def test_deleting_a_dead_letter_requeued_meanwhile_deletes_nothing(
    raced_letter: tuple[Harness, Flaky], caplog: pytest.LogCaptureFixture
) -> None:
    harness, state = raced_letter
    client = create_dashboard(harness.settings).test_client()
    with requeued_before_the_purge_writes(harness.settings):
        response = client.post(f"/job/{JOB_ID}/delete", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 409, response.status_code
    assert "no longer a dead letter" in response.get_data(as_text=True)
    assert not [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert_requeued_and_runs_once(harness.redis, state, harness.drain)


def test_emptying_the_dead_letters_skips_one_requeued_meanwhile(
    raced_letter: tuple[Harness, Flaky], caplog: pytest.LogCaptureFixture
) -> None:
    harness, state = raced_letter
    assert harness.event("evt_other", EVENT_TYPE).status_code == 200
    harness.drain()
    client = create_dashboard(harness.settings).test_client()
    with requeued_before_the_purge_writes(harness.settings):
        response = client.post("/queue/webhooks/failed/empty", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 200 and response.get_json()["status"] == "OK"
    assert failed_ids(harness.redis) == []
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    logged = (line.action, line.registry, line.count, line.skipped)  # type: ignore[attr-defined]
    assert logged == ("empty", "failed", 1, 1)
    assert_requeued_and_runs_once(harness.redis, state, harness.drain)
