"""Every command that takes an event names it the same two ways: `SOURCE EVENT_ID` and
`SOURCE/EVENT_ID` (one argument split on its first `/`: an event id may hold `/`, a source
name never does); the dead-letter commands take both besides a job id or a bare event id."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from tests.conftest import Harness, cli_env, webhooks
from tests.test_cli_dead_ids import two_sources

__all__ = ["cli_env", "two_sources"]  # fixtures


def _json(*args: str) -> dict[str, Any]:
    result = webhooks(*args, "--json")
    assert result.exit_code == 0, result.output
    shown: dict[str, Any] = json.loads(result.stdout)
    return shown


def _dead(redis: Redis) -> set[str]:
    return {str(i) for i in FailedJobRegistry("webhooks", connection=redis).get_job_ids()}


def test_events_show_takes_source_slash_event_id_as_it_takes_source_and_event_id(
    two_sources: Harness,
) -> None:
    for pair in (("inbound", "evt_1"), ("crm", "evt_1"), ("crm", "a/b")):
        shown = _json("events", "show", "/".join(pair))
        assert (shown["source"], shown["id"]) == pair
        assert shown == _json("events", "show", *pair)


def test_events_show_of_one_argument_without_a_slash_says_how_to_name_an_event(
    two_sources: Harness,
) -> None:
    result = webhooks("events", "show", "evt_1")
    assert result.exit_code == 2
    assert "name the event as SOURCE EVENT_ID or SOURCE/EVENT_ID" in result.output


def test_dead_show_takes_source_and_event_id_as_it_takes_source_slash_event_id(
    two_sources: Harness,
) -> None:
    for pair in (("crm", "evt_1"), ("crm", "a/b"), ("inbound", "evt_2")):
        shown = _json("dead", "show", *pair)
        assert shown["job_id"] == job_id_for(*pair)
        assert shown == _json("dead", "show", "/".join(pair))


def test_dead_requeue_takes_a_source_then_event_ids_of_that_source(
    two_sources: Harness,
) -> None:
    result = webhooks("dead", "requeue", "inbound", "evt_1", "evt_2")
    assert result.exit_code == 0, result.output
    # crm's evt_1 has the same event id: untouched.
    assert _dead(two_sources.redis) == {job_id_for("crm", "evt_1"), job_id_for("crm", "a/b")}


def test_dead_purge_takes_a_source_then_event_ids_holding_a_slash(two_sources: Harness) -> None:
    result = webhooks("dead", "purge", "crm", "a/b", "evt_1")
    assert result.exit_code == 0, result.output
    assert _dead(two_sources.redis) == {
        job_id_for("inbound", "evt_1"),
        job_id_for("inbound", "evt_2"),
    }


def test_a_source_then_an_event_id_of_no_dead_letter_is_reported_as_source_slash_id(
    two_sources: Harness,
) -> None:
    result = webhooks("dead", "requeue", "crm", "evt_2")
    assert result.exit_code == 1
    assert "not dead letters (skipped): crm/evt_2" in result.stderr
    assert len(_dead(two_sources.redis)) == 4
