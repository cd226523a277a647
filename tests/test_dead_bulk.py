"""Bulk dead-letter handling for the 3 a.m. case: select, dry-run, group by error."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry

from tests.conftest import SYNC_CRM, webhooks


@pytest.fixture
def dead_letters(make_dead_letters: Callable[..., list[str]]) -> list[str]:
    """Twelve dead letters with three causes, over two types."""
    causes = ["CRM timed out"] * 6 + ["card declined"] * 4 + ["schema changed"] * 2
    return make_dead_letters(
        [
            (f"e{n}", "invoice.paid" if n % 2 else "order.created", cause)
            for n, cause in enumerate(causes)
        ],
        webhook_max_retries=0,
    )


def test_dead_list_groups_by_error(dead_letters: list[str]) -> None:
    result = webhooks("dead", "list", "--group-by", "error", "--json")
    groups = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(g["error"], g["count"]) for g in groups] == [
        (f"{SYNC_CRM}: ValueError: CRM timed out", 6),
        (f"{SYNC_CRM}: ValueError: card declined", 4),
        (f"{SYNC_CRM}: ValueError: schema changed", 2),
    ]
    assert groups[0]["types"] == ["invoice.paid", "order.created"]
    table = webhooks("dead", "list", "--group-by", "error")
    assert table.stdout.splitlines()[1].split()[0] == "6"


def test_requeue_by_error_substring_moves_only_those(dead_letters: list[str], redis: Redis) -> None:
    result = webhooks("dead", "requeue", "--error", "crm TIMED")
    assert result.exit_code == 0 and "requeued 6" in result.stdout
    assert len(Queue("webhooks", connection=redis)) == 6
    assert FailedJobRegistry("webhooks", connection=redis).count == 6


def test_requeue_by_source_and_type(dead_letters: list[str], redis: Redis) -> None:
    result = webhooks("dead", "requeue", "--source", "inbound", "--type", "invoice.paid")
    assert "requeued 6" in result.stdout


def test_dry_run_prints_and_changes_nothing(dead_letters: list[str], redis: Redis) -> None:
    result = webhooks("dead", "requeue", "--error", "card declined", "--dry-run", "--json")
    assert len(result.stdout.splitlines()) == 4
    assert webhooks("dead", "requeue", "--error", "card declined", "--dry-run").stdout.endswith(
        "would requeue 4 dead letters\n"
    )
    assert FailedJobRegistry("webhooks", connection=redis).count == 12


def test_time_window_selects_by_when_the_event_was_dead_lettered(
    dead_letters: list[str], redis: Redis
) -> None:
    later = str(time.time() + 3600)
    assert "would requeue 0" in webhooks("dead", "requeue", "--since", later, "--dry-run").stdout
    assert "would requeue 12" in webhooks("dead", "requeue", "--until", later, "--dry-run").stdout


def test_purge_by_filter_asks_first(dead_letters: list[str], redis: Redis) -> None:
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
def test_ids_all_and_filters_are_exclusive(dead_letters: list[str], args: list[str]) -> None:
    assert webhooks(*args).exit_code == 2


def test_a_malformed_time_is_refused(dead_letters: list[str]) -> None:
    result = webhooks("dead", "requeue", "--since", "soonish")
    assert result.exit_code == 2 and "neither unix seconds nor an ISO" in result.output
