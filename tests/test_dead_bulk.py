"""Bulk dead-letter handling for the 3 a.m. case: select, dry-run, group by error."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner
from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry

from app.settings import Settings
from tests.conftest import Harness
from workers import Event, handler
from workers.ops.cli import main


@pytest.fixture
def dead_letters(
    make_harness: Callable[..., Harness], cli_env: Callable[[Settings], None]
) -> Settings:
    """Twelve dead letters with three causes, over two types."""
    harness = make_harness(webhook_max_retries=0)
    cli_env(harness.settings)

    @handler("inbound", "*")
    def fail(event: Event) -> None:
        raise RuntimeError(event.payload["cause"])

    causes = ["CRM timed out"] * 6 + ["card declined"] * 4 + ["schema changed"] * 2
    for n, cause in enumerate(causes):
        harness.event(f"e{n}", "invoice.paid" if n % 2 else "order.created", cause=cause)
    harness.drain()
    return harness.settings


def webhooks(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(main, list(args), input=stdin)


def test_dead_list_groups_by_error(dead_letters: Settings) -> None:
    result = webhooks("dead", "list", "--group-by", "error", "--json")
    groups = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(g["error"], g["count"]) for g in groups] == [
        ("RuntimeError: CRM timed out", 6),
        ("RuntimeError: card declined", 4),
        ("RuntimeError: schema changed", 2),
    ]
    assert groups[0]["types"] == ["invoice.paid", "order.created"]
    table = webhooks("dead", "list", "--group-by", "error")
    assert table.stdout.splitlines()[0].split()[0] == "6"


def test_requeue_by_error_substring_moves_only_those(dead_letters: Settings, redis: Redis) -> None:
    result = webhooks("dead", "requeue", "--error", "crm TIMED")
    assert result.exit_code == 0 and "requeued 6" in result.stdout
    assert len(Queue("webhooks", connection=redis)) == 6
    assert FailedJobRegistry("webhooks", connection=redis).count == 6


def test_requeue_by_source_and_type(dead_letters: Settings, redis: Redis) -> None:
    result = webhooks("dead", "requeue", "--source", "inbound", "--type", "invoice.paid")
    assert "requeued 6" in result.stdout


def test_dry_run_prints_and_changes_nothing(dead_letters: Settings, redis: Redis) -> None:
    result = webhooks("dead", "requeue", "--error", "card declined", "--dry-run")
    assert len(result.stdout.splitlines()) == 4
    assert "would requeue 4" in result.stderr
    assert FailedJobRegistry("webhooks", connection=redis).count == 12


def test_time_window_selects_by_when_the_event_was_dead_lettered(
    dead_letters: Settings, redis: Redis
) -> None:
    later = str(time.time() + 3600)
    assert "would requeue 0" in webhooks("dead", "requeue", "--since", later, "--dry-run").stderr
    assert "would requeue 12" in webhooks("dead", "requeue", "--until", later, "--dry-run").stderr


def test_purge_by_filter_asks_first(dead_letters: Settings, redis: Redis) -> None:
    refused = webhooks("dead", "purge", "--error", "schema", stdin="n\n")
    assert refused.exit_code == 1
    assert FailedJobRegistry("webhooks", connection=redis).count == 12
    done = webhooks("dead", "purge", "--error", "schema", "--yes")
    assert "purged 2" in done.stdout
    assert FailedJobRegistry("webhooks", connection=redis).count == 10


@pytest.mark.parametrize(
    "args",
    [
        ["dead", "requeue", "e1", "--all"],
        ["dead", "requeue", "--all", "--source", "inbound"],
        ["dead", "requeue"],
    ],
)
def test_ids_all_and_filters_are_exclusive(dead_letters: Settings, args: list[str]) -> None:
    assert webhooks(*args).exit_code == 2


def test_a_malformed_time_is_refused(dead_letters: Settings) -> None:
    result = webhooks("dead", "requeue", "--since", "soonish")
    assert result.exit_code == 2 and "neither unix seconds nor an ISO" in result.output
