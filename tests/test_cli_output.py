"""The `webhooks` command prints every list one way: a header row, the rows, the count as the
last line, all on stdout; with --json, JSON objects and nothing else."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.conftest import webhooks

LISTINGS = {
    "dead list": (["dead", "list"], "JOB ID", "3 dead letters"),
    "dead list --group-by error": (
        ["dead", "list", "--group-by", "error"],
        "COUNT",
        "3 dead letters in 2 groups",
    ),
    "events list": (["events", "list"], "RECEIVED", "3 events"),
    "dead requeue --dry-run": (
        ["dead", "requeue", "--all", "--dry-run"],
        "JOB ID",
        "would requeue 3 dead letters",
    ),
    "dead purge --dry-run": (
        ["dead", "purge", "--source", "inbound", "--dry-run"],
        "JOB ID",
        "would purge 3 dead letters",
    ),
}


@pytest.fixture
def three_dead(make_dead_letters: Callable[..., list[str]]) -> list[str]:
    return make_dead_letters(
        [
            ("evt_a", "order.created", "CRM down"),
            ("evt_b", "order.paid", "CRM down"),
            ("evt_c", "order.paid", "schema changed"),
        ],
        webhook_max_retries=0,
    )


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_a_listing_is_header_rows_and_count_on_stdout_alone(
    three_dead: list[str], name: str
) -> None:
    args, first_column, count = LISTINGS[name]
    result = webhooks(*args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(first_column)
    assert lines[-1] == count
    # Only the line saying which Redis goes to stderr: nothing to interleave with the table.
    assert [line for line in result.stderr.splitlines() if not line.startswith("redis: ")] == []


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_every_listing_has_json_with_nothing_else_on_stdout(
    three_dead: list[str], name: str
) -> None:
    args, _, _ = LISTINGS[name]
    result = webhooks(*args, "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows and all(isinstance(row, dict) for row in rows)


def test_an_empty_listing_is_its_count_alone(make_dead_letters: Callable[..., list[str]]) -> None:
    make_dead_letters([])
    assert webhooks("dead", "list").stdout == "0 dead letters\n"
    assert webhooks("dead", "list", "--json").stdout == ""


def test_columns_line_up_under_their_headers(three_dead: list[str]) -> None:
    lines = webhooks("events", "list").stdout.splitlines()
    starts = [lines[0].index(word) for word in ("SOURCE", "STATUS", "TRIES", "TYPE")]
    for row in lines[1:-1]:
        assert [row[start - 2 : start] for start in starts] == ["  "] * 4, row
        assert all(row[start] != " " for start in starts), row


def test_requeue_reports_its_count_on_stdout_and_as_json(three_dead: list[str]) -> None:
    done = webhooks("dead", "requeue", three_dead[0])
    assert done.stdout == "requeued 1 dead letter\n"
    result = webhooks("dead", "requeue", three_dead[1], "inbound-nope", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"requeued": 1, "not_dead_letters": ["inbound-nope"]}
    assert "not dead letters (skipped): inbound-nope" in result.stderr
