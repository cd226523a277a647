"""`webhooks events list` finds events as the dashboard's Events page does: newest first,
by type (a `prefix.*` too), id and status (`failed` as the dashboard says it), a page at a
time that says how many more there are."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.settings import Settings
from tests.conftest import Harness, sync_crm, webhooks
from workers import handler

# Oldest first, as they are sent; only invoice.paid has a handler, which fails.
SENT = [
    ("evt_0", "order.created"),
    ("evt_1", "invoice.paid"),
    ("evt_2", "invoice.sent"),
    ("evt_3", "order.created"),
]


@pytest.fixture
def received(make_harness: Callable[..., Harness], cli_env: Callable[[Settings], None]) -> None:
    harness = make_harness(webhook_max_retries=0)
    cli_env(harness.settings)
    handler("inbound", "invoice.paid")(sync_crm)
    for event_id, event_type in SENT:
        assert harness.event(event_id, event_type, cause="down").status_code == 200
    harness.drain()


def _ids(*args: str) -> list[str]:
    result = webhooks("events", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return [json.loads(line)["id"] for line in result.stdout.splitlines()]


def test_events_are_listed_newest_first(received: None) -> None:
    assert _ids() == ["evt_3", "evt_2", "evt_1", "evt_0"]


def test_type_matches_exactly(received: None) -> None:
    assert _ids("--type", "order.created") == ["evt_3", "evt_0"]
    assert _ids("--type", "invoice") == []


def test_a_type_ending_in_a_star_matches_its_prefix(received: None) -> None:
    assert _ids("--type", "invoice.*") == ["evt_2", "evt_1"]


def test_id_finds_that_event_only(received: None) -> None:
    assert _ids("--id", "evt_2") == ["evt_2"]


def test_status_failed_is_dead_as_the_dashboard_says(received: None) -> None:
    assert _ids("--status", "failed") == _ids("--status", "dead") == ["evt_1"]


def test_limit_shows_the_newest_and_says_how_many_more(received: None) -> None:
    result = webhooks("events", "list", "--limit", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[5] for line in lines[1:-1]] == ["evt_3", "evt_2"]
    assert lines[-1].startswith("2 of 4 events, the newest (2 more: raise --limit")


def test_limit_with_json_keeps_stdout_to_the_rows(received: None) -> None:
    result = webhooks("events", "list", "--limit", "3", "--json")
    assert len(result.stdout.splitlines()) == 3
    assert "3 of 4 events" in result.stderr


def test_a_limit_below_one_is_refused(received: None) -> None:
    result = webhooks("events", "list", "--limit", "0")
    assert result.exit_code == 2 and "--limit" in result.output
