"""`webhooks dead show|requeue|purge` name a dead letter as logs and the Events page do: by
SOURCE/EVENT_ID or by its bare event id, as well as by its job id."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from tests.conftest import SECRET, Harness, cli_env, event_body, sync_crm, webhooks
from workers import handler

__all__ = ["cli_env"]  # fixture

CRM_SECRET = "crm-secret-0123456789"


@pytest.fixture
def two_sources(
    make_harness: Callable[..., Harness],
    cli_env: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> Harness:
    """Dead letters of two sources: `evt_1` in both, `evt_2` in `inbound` only, and
    `a/b` (an event id with a slash) in `crm`."""
    sources = "inbound:hmac,crm:hmac"
    harness = make_harness(
        webhook_sources=sources,
        per_source={"WEBHOOK_SECRET_CRM": CRM_SECRET},
        webhook_max_retries=0,
    )
    cli_env(harness.settings)
    monkeypatch.setenv("WEBHOOK_SOURCES", sources)
    monkeypatch.setenv("WEBHOOK_SECRET_CRM", CRM_SECRET)
    handler("inbound", "*")(sync_crm)
    handler("crm", "*")(sync_crm)
    for event_id in ("evt_1", "evt_2"):
        harness.send(event_body(event_id, cause="down"), SECRET, "inbound")
    for event_id in ("evt_1", "a/b"):
        harness.send(event_body(event_id, cause="down"), CRM_SECRET, "crm")
    harness.drain()
    assert FailedJobRegistry("webhooks", connection=harness.redis).count == 4
    return harness


def _dead(redis: Redis) -> set[str]:
    return {str(i) for i in FailedJobRegistry("webhooks", connection=redis).get_job_ids()}


def _shown(*args: Any) -> dict[str, Any]:
    result = webhooks("dead", "show", *args, "--json")
    assert result.exit_code == 0, result.output
    shown: dict[str, Any] = json.loads(result.stdout)
    return shown


def test_dead_show_takes_a_bare_event_id(two_sources: Harness) -> None:
    assert _shown("evt_2")["job_id"] == job_id_for("inbound", "evt_2")


def test_dead_show_takes_source_slash_event_id(two_sources: Harness) -> None:
    assert _shown("crm/evt_1")["job_id"] == job_id_for("crm", "evt_1")


def test_dead_show_takes_an_event_id_holding_a_slash(two_sources: Harness) -> None:
    assert _shown("a/b")["job_id"] == job_id_for("crm", "a/b")


def test_dead_show_still_takes_a_job_id(two_sources: Harness) -> None:
    job_id = job_id_for("inbound", "evt_1")
    assert _shown(job_id)["job_id"] == job_id


def test_an_event_id_of_two_sources_is_refused_in_one_line_naming_both(
    two_sources: Harness,
) -> None:
    result = webhooks("dead", "show", "evt_1")
    assert result.exit_code == 1 and result.stdout == ""
    message = result.stderr.splitlines()[-1]
    assert "evt_1 is the event id of 2 dead letters: crm/evt_1" in message
    assert "inbound/evt_1" in message and "give SOURCE/EVENT_ID or the job id" in message


def test_an_ambiguous_event_id_requeues_nothing(two_sources: Harness) -> None:
    before = _dead(two_sources.redis)
    result = webhooks("dead", "requeue", "evt_2", "evt_1")
    assert result.exit_code == 1 and "is the event id of 2 dead letters" in result.stderr
    assert _dead(two_sources.redis) == before


def test_dead_requeue_takes_event_ids_in_both_forms(two_sources: Harness) -> None:
    result = webhooks("dead", "requeue", "evt_2", "crm/evt_1")
    assert result.exit_code == 0, result.output
    assert result.stdout == "requeued 2 dead letters\n"
    assert _dead(two_sources.redis) == {job_id_for("inbound", "evt_1"), job_id_for("crm", "a/b")}


def test_dead_purge_takes_an_event_id(two_sources: Harness) -> None:
    result = webhooks("dead", "purge", "inbound/evt_1")
    assert result.exit_code == 0 and result.stdout == "purged 1 dead letter\n", result.output
    assert job_id_for("inbound", "evt_1") not in _dead(two_sources.redis)


def test_a_name_of_no_dead_letter_is_reported_as_given(two_sources: Harness) -> None:
    result = webhooks("dead", "requeue", "evt_2", "inbound/evt_9")
    assert result.exit_code == 1 and result.stdout == "requeued 1 dead letter, 1 skipped\n"
    assert result.stderr.endswith("\nnot dead letters (skipped): inbound/evt_9\n")


def test_a_dry_run_takes_event_ids(two_sources: Harness) -> None:
    result = webhooks("dead", "purge", "evt_2", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["event_id"] for line in result.stdout.splitlines()] == ["evt_2"]


def test_an_event_id_of_a_source_no_longer_configured_is_found(
    two_sources: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", "inbound:hmac")
    assert _shown("a/b")["job_id"] == job_id_for("crm", "a/b")
    assert _shown("crm/evt_1")["job_id"] == job_id_for("crm", "evt_1")
