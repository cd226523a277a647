"""WEBHOOK_DEDUPE_MODE=log-only: measure the real duplicate rate before enforcing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.keys import job_id_for
from app.settings import ConfigError, Settings
from tests.conftest import event_body
from tests.conftest import metric_value as value


def test_log_only_still_enqueues_a_duplicate_marks_it_and_says_so(
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    redis: Redis,
    capfd: pytest.CaptureFixture[str],
) -> None:
    client = make_client(webhook_dedupe_mode="log-only")
    counted = value(
        client.get("/metrics").text,
        "webhooks_received_total",
        source="inbound",
        outcome="duplicate",
    )
    post_event(client, event_body("evt_1"))
    again = post_event(client, event_body("evt_1"))
    assert again.json() == {"status": "duplicate", "id": "evt_1"}
    jobs = Queue("webhooks", connection=redis).get_jobs()
    assert len(jobs) == 2
    original, copy = jobs
    assert original.id == job_id_for("inbound", "evt_1")
    assert copy.id.startswith(original.id + "-dup-") and copy.meta["duplicate"] is True
    assert copy.args[3] == original.args[3]
    lines = [json.loads(x) for x in capfd.readouterr().err.splitlines() if '"state"' in x]
    [duplicate] = [x for x in lines if x["state"] == "duplicate"]
    assert duplicate["enqueued_as"] == copy.id
    assert (
        value(
            client.get("/metrics").text,
            "webhooks_received_total",
            source="inbound",
            outcome="duplicate",
        )
        == counted + 1
    )


def test_enforce_mode_enqueues_nothing_for_a_duplicate(
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    redis: Redis,
    make_settings: Callable[..., Settings],
) -> None:
    assert make_settings().webhook_dedupe_mode == "enforce"
    client = make_client()
    post_event(client, event_body("evt_1"))
    post_event(client, event_body("evt_1"))
    assert len(Queue("webhooks", connection=redis)) == 1


def test_an_unknown_dedupe_mode_is_refused(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ConfigError, match=r"^WEBHOOK_DEDUPE_MODE: .*'enforce' or 'log-only'"):
        make_settings(webhook_dedupe_mode="sometimes")
