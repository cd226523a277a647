"""Replay: Stripe's events API, GitHub's deliveries API, the ledger, and the token endpoint."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import Harness, webhooks
from tests.fake_apis import FakeApi
from tests.replay_apis import NOW, api, env, stripe_event, waits
from workers import Event, handler

__all__ = ["api", "env", "waits"]  # fixtures


def test_stripe_replay_pages_the_window_and_enqueues_only_missing_events(
    env: None, api: FakeApi, redis: Redis
) -> None:
    api.events = [stripe_event(n, NOW - n * 60) for n in range(7)]  # newest first
    first = webhooks("replay", "stripe", "--since", str(NOW - 400), "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout) == {"fetched": 7, "new": 7, "already_had": 0}
    assert sum("starting_after" in path for _, path in api.requests) == 3  # 4 pages of 2
    again = webhooks("replay", "stripe", "--since", str(NOW - 400), "--json")
    assert json.loads(again.stdout) == {"fetched": 7, "new": 0, "already_had": 7}
    assert len(Queue("webhooks", connection=redis)) == 7


def test_stripe_replay_honours_until_and_iso_times(env: None, api: FakeApi) -> None:
    api.events = [stripe_event(n, NOW - n * 60) for n in range(5)]
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 250))
    result = webhooks("replay", "stripe", "--since", since, "--until", str(NOW - 90), "--json")
    assert json.loads(result.stdout)["fetched"] == 3  # evt_2, evt_3, evt_4... within window


def test_stripe_replay_waits_out_429s_and_dropped_connections(
    env: None, api: FakeApi, waits: list[float]
) -> None:
    api.events = [stripe_event(n, NOW) for n in range(3)]
    api.throttle, api.drop = 2, 1
    result = webhooks("replay", "stripe", "--since", str(NOW - 10), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["new"] == 3
    # The dropped connection backs off 1 s; each 429 waits its Retry-After (0).
    assert waits == [1.0, 0.0, 0.0]


def test_a_rejected_api_key_is_a_clear_error_without_the_key(
    env: None, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRIPE_API_KEY", "sk_live_wrong_key_123")
    result = webhooks("replay", "stripe", "--since", str(NOW))
    assert result.exit_code == 1
    assert "401: Invalid API Key provided" in result.output
    assert "sk_live_wrong_key_123" not in result.output


def test_an_unreachable_api_is_an_error_after_bounded_retries(
    env: None, monkeypatch: pytest.MonkeyPatch, waits: list[float]
) -> None:
    monkeypatch.setenv("STRIPE_API_BASE", "http://127.0.0.1:1")
    result = webhooks("replay", "stripe", "--since", str(NOW))
    assert result.exit_code == 1 and "cannot reach" in result.output
    assert waits == [1.0, 2.0, 4.0, 8.0]  # backing off between its 5 attempts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "nope", "--since", "0"], "unknown source 'nope'"),
        (["replay", "inbound", "--since", "0"], "replay reads the APIs of stripe and github"),
        (["replay", "stripe", "--since", "yesterday-ish"], "neither unix seconds nor an ISO"),
        (["replay", "github", "--since", "0"], "needs --repo OWNER/NAME and --hook-id"),
        (["replay", "stripe"], "Missing option '--since'"),
    ],
)
def test_replay_bad_input_is_refused_clearly(env: None, args: list[str], message: str) -> None:
    result = webhooks(*args)
    assert result.exit_code == 2 and message in result.output


def delivery(n: int, guid: str, status: int, minutes_ago: int) -> dict[str, Any]:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - minutes_ago * 60))
    return {
        "id": n,
        "guid": guid,
        "delivered_at": when,
        "redelivery": False,
        "status_code": status,
        "status": "OK" if status < 300 else "failed",
        "event": "push",
    }


def test_github_replay_redelivers_failed_deliveries_we_do_not_have(
    env: None, api: FakeApi, redis: Redis
) -> None:
    redis.set("webhook:seen:github:guid-had", 1)
    api.deliveries = [
        delivery(6, "guid-b", 200, 1),  # redelivered later, succeeded
        delivery(5, "guid-a", 502, 2),
        delivery(4, "guid-ok", 200, 3),
        delivery(3, "guid-b", 500, 4),
        delivery(2, "guid-had", 500, 5),  # failed at GitHub, but we have it
        delivery(1, "guid-old", 500, 600),  # outside the window
    ]
    result = webhooks(
        "replay", "github", "--since", str(NOW - 3600), "--repo", "o/r", "--hook-id", "42", "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "fetched": 5,
        "new": 1,
        "already_had": 3,
        "failed": 1,
        "redelivered": 1,
    }
    assert api.redelivered == [5]
    assert ("POST", "/repos/o/r/hooks/42/deliveries/5/attempts") in api.requests


@pytest.fixture
def dead_and_done(make_harness: Callable[..., Harness], redis: Redis, env: None) -> Settings:
    harness = make_harness(webhook_max_retries=0)

    @handler("inbound", "*")
    def fail_some(event: Event) -> None:
        if event.type == "bad":
            raise RuntimeError("downstream down")

    harness.event("evt_dead", "bad")
    harness.event("evt_done", "good")
    harness.drain()
    redis.delete("rq:job:" + job_id_for("inbound", "evt_done"))  # as RQ's result TTL would
    return harness.settings


def test_ledger_replay_requeues_dead_letters_and_re_enqueues_events_whose_job_is_gone(
    dead_and_done: Settings, redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_MAX_RETRIES", "0")
    result = webhooks("replay", "ledger", "inbound", "--since", str(NOW - 60), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "fetched": 2,
        "new": 2,
        "already_had": 0,
        "requeued": 1,
        "enqueued": 1,
        "pending": 0,
        "no_payload": 0,
        "untracked": 0,
    }
    assert sorted(Queue("webhooks", connection=redis).job_ids) == sorted(
        job_id_for("inbound", e) for e in ("evt_dead", "evt_done")
    )


def test_ledger_replay_can_select_by_status(dead_and_done: Settings, redis: Redis) -> None:
    result = webhooks(
        "replay", "ledger", "inbound", "--since", str(NOW - 60), "--status", "dead", "--json"
    )
    assert json.loads(result.stdout)["requeued"] == 1
    assert Queue("webhooks", connection=redis).job_ids == [job_id_for("inbound", "evt_dead")]


TOKEN = "replay-token-0123456789abcdef-0001"
OTHER_TOKEN = "replay-token-0123456789abcdef-0002"


def test_the_replay_endpoint_is_absent_unless_a_token_is_configured(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client()
    response = client.post(
        "/webhooks/inbound/replay", content=b'{"id": "e"}', headers={"X-Replay-Token": "anything"}
    )
    assert response.status_code == 404


@pytest.mark.parametrize("token", ["", "   "])
def test_an_empty_replay_token_disables_the_endpoint_instead_of_opening_it(
    make_client: Callable[..., TestClient], redis: Redis, token: str
) -> None:
    # `WEBHOOK_REPLAY_TOKEN=` is what uncommenting the line of .env.example gives.
    client = make_client(webhook_replay_token=token)
    for headers in ({}, {"X-Replay-Token": ""}, {"X-Replay-Token": token}):
        response = client.post(
            "/webhooks/inbound/replay", content=b'{"id": "e", "type": "t"}', headers=headers
        )
        assert response.status_code == 404
    assert redis.dbsize() == 0


def test_the_replay_endpoint_needs_the_token_and_dedupes(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client(webhook_replay_token=TOKEN)
    body = b'{"id": "evt_r", "type": "order.created", "re": "serialised"}'
    wrong = client.post(
        "/webhooks/inbound/replay", content=body, headers={"X-Replay-Token": OTHER_TOKEN}
    )
    assert wrong.status_code == 401
    headers = {"X-Replay-Token": TOKEN}
    first = client.post("/webhooks/inbound/replay", content=body, headers=headers)
    again = client.post("/webhooks/inbound/replay", content=body, headers=headers)
    assert first.json() == {"status": "accepted", "id": "evt_r"}
    assert again.json() == {"status": "duplicate", "id": "evt_r"}
    [job] = Queue("webhooks", connection=redis).get_jobs()
    assert job.args[4] == {"x-webhook-replayed-from": "replay-endpoint"}


def test_the_replay_endpoint_takes_the_event_id_from_a_header_for_header_id_providers(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client(
        webhook_sources="github",
        per_source={"WEBHOOK_SECRET_GITHUB": "github-secret-0123456"},
        webhook_replay_token=TOKEN,
    )
    response = client.post(
        "/webhooks/github/replay",
        content=b'{"action": "opened"}',
        headers={
            "X-Replay-Token": TOKEN,
            "X-Replay-Event-Id": "guid-1",
            "X-Replay-Event-Type": "pull_request",
        },
    )
    assert response.json() == {"status": "accepted", "id": "guid-1"}
    assert Queue("webhooks", connection=redis).get_jobs()[0].meta["type"] == "pull_request"


def test_github_replay_waits_out_429s_and_dropped_connections(
    env: None, api: FakeApi, redis: Redis, waits: list[float]
) -> None:
    api.deliveries = [delivery(2, "guid-x", 500, 1), delivery(1, "guid-y", 200, 2)]
    api.throttle, api.drop = 2, 1
    result = webhooks(
        "replay", "github", "--since", str(NOW - 3600), "--repo", "o/r", "--hook-id", "7", "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["redelivered"] == 1 and api.redelivered == [2]
    assert waits == [1.0, 0.0, 0.0]


def test_a_terminal_gets_a_progress_bar_with_the_counts() -> None:
    import io

    from workers.ops.replay_cli import _progress
    from workers.ops.replay_counts import Counts

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    with _progress(False, screen) as progress:
        for n in range(1, 4):
            progress(Counts(fetched=n, new=n - 1, already_had=1))
    assert "replaying" in screen.getvalue()
    assert "fetched 3, new 2, already had 1" in screen.getvalue()
    piped = Terminal()
    piped.isatty = lambda: False  # type: ignore[method-assign]
    with _progress(False, piped) as progress:
        progress(Counts(fetched=1))
    assert piped.getvalue() == ""
