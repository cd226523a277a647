"""The event ledger: every accepted event's record, kept after RQ drops the job."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from redis import Redis

from app.keys import Keys, job_id_for
from app.settings import Settings
from tests.conftest import Harness, event_body
from tests.processes import RedisProxy
from workers import Event, handler
from workers.dev.redis_server import RedisServer
from workers.ops.cli import main
from workers.ops.deadletters import DeadLetters
from workers.ops.ledger import EventLedger
from workers.registry import handler_name

Post = Callable[..., Any]


@pytest.fixture
def harness(make_harness: Callable[..., Harness], cli_env: Callable[[Settings], None]) -> Harness:
    harness = make_harness(webhook_ledger_ttl=3600)
    cli_env(harness.settings)
    return harness


def record(redis: Redis, event_id: str) -> dict[str, str]:
    return {
        k.decode(): v.decode()
        for k, v in redis.hgetall(f"webhook:event:inbound:{event_id}").items()
    }


def test_an_accepted_event_is_recorded_in_the_same_round_trip_its_payload_stored_once(
    harness: Harness,
    make_client: Callable[..., TestClient],
    post_event: Post,
    redis: Redis,
    redis_server: RedisServer,
    make_proxy: Callable[[int], RedisProxy],
) -> None:
    settings = harness.settings
    proxy = make_proxy(redis_server.port)
    client = make_client(settings.model_copy(update={"redis_url": proxy.url}))
    post_event(client, event_body("evt_0"))  # loads the script
    proxy.log.clear()
    post_event(client, event_body("evt_1", "order.created", amount=5))
    # Claim, enqueue and ledger record: one round trip, one script call.
    assert len(proxy.log) == 1 and proxy.log[0].count(b"EVALSHA") == 1
    stored = record(redis, "evt_1")
    assert (stored["status"], stored["type"], stored["attempts"]) == (
        "queued",
        "order.created",
        "0",
    )
    assert 3500 < redis.ttl("webhook:event:inbound:evt_1") <= 3600
    # Stored once: in the job until the event settles; the ledger reads it from there.
    assert "payload" not in stored
    found = EventLedger(Keys("webhook", "webhooks"), redis).get("inbound", "evt_1")
    assert found is not None and json.loads(found.payload or b"{}")["amount"] == 5


def test_the_record_follows_the_event_through_retries_to_the_dead_letters_and_back(
    harness: Harness, redis: Redis
) -> None:
    url = harness.settings.redis_url

    @handler("inbound", "order.created")
    def flaky(event: Event) -> None:
        if Redis.from_url(url).exists("fail"):
            raise RuntimeError("downstream said no")

    redis.set("fail", 1)
    harness.event("evt_2")
    harness.drain()
    stored = record(redis, "evt_2")
    assert (stored["status"], stored["attempts"]) == ("dead", "3")
    assert stored["last_error"] == f"{handler_name(flaky)}: RuntimeError: downstream said no"
    redis.delete("fail")
    DeadLetters(harness.settings, redis).requeue(job_id_for("inbound", "evt_2"))
    assert record(redis, "evt_2")["status"] == "queued"
    harness.drain()
    stored = record(redis, "evt_2")
    assert (stored["status"], stored["attempts"]) == ("done", "4")
    assert float(stored["settled_at"]) >= float(stored["received_at"])


def test_the_record_outlives_the_rq_job(harness: Harness, redis: Redis) -> None:
    harness.event("evt_3", "unhandled")
    harness.drain()
    redis.delete("rq:job:" + job_id_for("inbound", "evt_3"))
    result = CliRunner().invoke(main, ["events", "show", "inbound", "evt_3", "--json"])
    shown = json.loads(result.stdout)
    assert (shown["status"], shown["type"]) == ("ignored", "unhandled")
    assert json.loads(shown["payload"])["id"] == "evt_3"


def test_a_new_delivery_after_the_dedupe_window_starts_a_fresh_record(
    harness: Harness, redis: Redis
) -> None:
    url = harness.settings.redis_url

    @handler("inbound", "order.created")
    def fails_once(event: Event) -> None:
        if Redis.from_url(url).delete("fail-once"):
            raise RuntimeError("first attempt fails")

    redis.set("fail-once", 1)
    harness.event("evt_r", note="first")
    harness.drain()
    settled = record(redis, "evt_r")
    assert (settled["status"], settled["attempts"]) == ("done", "2")
    assert {"payload", "settled_at", "last_error"} <= set(settled)
    redis.hset("webhook:event:inbound:evt_r", "format", "form")  # as a form delivery leaves
    # The dedupe window and RQ's finished job both expire; the provider delivers the id again.
    redis.delete("webhook:seen:inbound:evt_r", "rq:job:" + job_id_for("inbound", "evt_r"))
    assert harness.event("evt_r", note="second").json()["status"] == "accepted"
    fresh = record(redis, "evt_r")
    assert set(fresh) == {"source", "id", "type", "status", "attempts", "received_at"}
    assert (fresh["status"], fresh["attempts"]) == ("queued", "0")
    assert float(fresh["received_at"]) >= float(settled["settled_at"])
    found = EventLedger(Keys("webhook", "webhooks"), redis).get("inbound", "evt_r")
    assert found is not None and found.settled_at is None and found.payload_format == "json"
    assert json.loads(found.payload or b"{}")["note"] == "second"


def test_events_list_filters_by_source_status_and_time(harness: Harness, redis: Redis) -> None:
    @handler("inbound", "bad")
    def bad(event: Event) -> None:
        raise ValueError("no")

    for n in range(3):
        harness.event(f"evt_{n}", "bad" if n == 1 else "good")
    harness.drain()
    since = str(time.time() - 60)
    listed = CliRunner().invoke(main, ["events", "list", "--since", since, "--json"])
    # Newest first, as the Events page lists them.
    assert [json.loads(x)["id"] for x in listed.stdout.splitlines()] == ["evt_2", "evt_1", "evt_0"]
    dead = CliRunner().invoke(
        main, ["events", "list", "--status", "dead", "--source", "inbound", "--json"]
    )
    assert [json.loads(x)["id"] for x in dead.stdout.splitlines()] == ["evt_1"]
    future = CliRunner().invoke(main, ["events", "list", "--since", str(time.time() + 60)])
    assert future.stdout == "0 events\n"


def test_a_status_written_by_a_newer_version_is_listed_as_it_is(
    harness: Harness, redis: Redis
) -> None:
    harness.event("evt_new")
    redis.hset("webhook:event:inbound:evt_new", "status", "archived")
    listed = CliRunner().invoke(main, ["events", "list", "--json"])
    assert [json.loads(x)["status"] for x in listed.stdout.splitlines()] == ["archived"]
    shown = CliRunner().invoke(main, ["events", "show", "inbound", "evt_new"])
    assert shown.exit_code == 0 and "archived" in shown.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["events", "show", "nope", "e"], 2, "unknown source 'nope'"),
        (["events", "show", "inbound", "evt_never"], 1, "no record of inbound event"),
        (["events", "list", "--since", "last tuesday"], 2, "neither unix seconds nor an ISO"),
        (["events", "list", "--since", "nan"], 2, "'nan' is neither unix seconds nor an ISO"),
        (["events", "list", "--until", "-inf"], 2, "'-inf' is neither unix seconds nor an ISO"),
        (["events", "list", "--since", "1e999"], 2, "'1e999' is neither unix seconds nor"),
        (["events", "list", "--status", "exploded"], 2, "Invalid value for '--status'"),
        (["events", "list", "--source", "nope"], 2, "unknown source 'nope'"),
    ],
)
def test_events_bad_input_is_refused_clearly(
    harness: Harness, args: list[str], code: int, message: str
) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code and message in result.output
