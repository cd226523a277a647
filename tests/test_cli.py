"""The `webhooks dead` command, against a real redis-server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner
from redis import Redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry

from tests.conftest import SECRET, SYNC_CRM, webhooks
from workers.ops.cli import main

Post = Callable[..., Any]


@pytest.fixture
def dead_letters(make_dead_letters: Callable[..., list[str]]) -> list[str]:
    """Three events dead-lettered by a failing handler; the command's env points at them."""
    return make_dead_letters([(f"evt_{n}", f"type.{n}", f"cannot sync evt_{n}") for n in range(3)])


def test_dead_list_json_has_one_object_per_dead_letter(dead_letters: list[str]) -> None:
    result = webhooks("dead", "list", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(r["job_id"] for r in rows) == sorted(dead_letters)
    row = next(r for r in rows if r["event_id"] == "evt_1")
    assert (row["source"], row["type"], row["attempts"]) == ("inbound", "type.1", 3)
    assert row["error"] == f"{SYNC_CRM}: ValueError: cannot sync evt_1"


def test_dead_list_prints_a_table(dead_letters: list[str]) -> None:
    result = webhooks("dead", "list")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].split()[:3] == ["JOB", "ID", "SOURCE"]
    assert all(job_id in result.stdout for job_id in dead_letters)


def test_dead_show_prints_payload_and_traceback(dead_letters: list[str]) -> None:
    result = webhooks("dead", "show", dead_letters[0], "--json")
    shown = json.loads(result.stdout)
    assert json.loads(shown["payload"]) == {
        "id": "evt_0",
        "type": "type.0",
        "cause": "cannot sync evt_0",
    }
    assert "ValueError: cannot sync evt_0" in shown["traceback"]


def test_dead_show_of_an_unknown_id_fails_clearly(dead_letters: list[str]) -> None:
    result = webhooks("dead", "show", "inbound-nope")
    assert result.exit_code == 1 and "inbound-nope is not a dead letter" in result.output


def test_dead_show_of_an_unknown_source_and_event_id_names_both(dead_letters: list[str]) -> None:
    result = webhooks("dead", "show", "inbound", "evt_nope")
    assert result.exit_code == 1 and "inbound/evt_nope is not a dead letter" in result.output


def test_dead_requeue_moves_the_named_ones_back_to_the_queue(
    dead_letters: list[str], redis: Redis
) -> None:
    result = webhooks("dead", "requeue", dead_letters[0], dead_letters[1])
    assert result.exit_code == 0 and "requeued 2" in result.stdout
    assert sorted(Queue("webhooks", connection=redis).job_ids) == sorted(dead_letters[:2])
    job = Job.fetch(dead_letters[0], connection=redis)
    assert job.retries_left == 2 and job.meta["state"] == "queued"


def test_dead_requeue_skips_unknown_ids_and_exits_1_after_doing_the_rest(
    dead_letters: list[str], redis: Redis
) -> None:
    result = webhooks("dead", "requeue", "inbound-nope", dead_letters[2])
    assert result.exit_code == 1
    assert "inbound-nope" in result.stderr
    assert Queue("webhooks", connection=redis).job_ids == [dead_letters[2]]


def test_dead_requeue_all(dead_letters: list[str], redis: Redis) -> None:
    assert webhooks("dead", "requeue", "--all").exit_code == 0
    assert FailedJobRegistry("webhooks", connection=redis).count == 0
    assert len(Queue("webhooks", connection=redis).job_ids) == 3


def test_dead_requeue_needs_ids_or_all(dead_letters: list[str]) -> None:
    assert webhooks("dead", "requeue").exit_code == 2


def test_dead_purge_deletes_the_job(dead_letters: list[str], redis: Redis) -> None:
    assert webhooks("dead", "purge", dead_letters[0]).exit_code == 0
    assert not redis.exists(f"rq:job:{dead_letters[0]}")
    assert dead_letters[0] not in FailedJobRegistry("webhooks", connection=redis)


def test_dead_purge_all_asks_first(dead_letters: list[str], redis: Redis) -> None:
    refused = CliRunner().invoke(main, ["dead", "purge", "--all"], input="n\n")
    assert refused.exit_code == 1
    assert FailedJobRegistry("webhooks", connection=redis).count == 3
    assert webhooks("dead", "purge", "--all", "--yes").exit_code == 0
    assert FailedJobRegistry("webhooks", connection=redis).count == 0


def test_an_unreachable_redis_is_a_clear_error_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://:hunter2@127.0.0.1:1/0")
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    result = webhooks("dead", "list")
    assert result.exit_code == 1
    assert "cannot reach Redis at 127.0.0.1:1/0" in result.output
    assert "hunter2" not in result.output


def test_a_missing_secret_is_reported_by_name() -> None:
    result = webhooks("dead", "list")
    assert result.exit_code == 1
    assert "WEBHOOK_SECRET_INBOUND (or WEBHOOK_SIGNING_SECRET) is not set" in result.output


# Terminal control sequences a provider (payload, type) or a handler (error) could plant:
# clear the screen, set the window title, ring the bell, overwrite the line, reorder text.
TERMINAL_ATTACKS = "\x1b[2J\x1b]0;owned\x07\r\x08\u202e"
CONTROL_BYTES = ("\x1b", "\x07", "\r", "\x08", "\u202e")


@pytest.fixture
def hostile_dead_letter(make_dead_letters: Callable[..., list[str]]) -> str:
    [job_id] = make_dead_letters(
        [("evt_term", "order." + TERMINAL_ATTACKS, f"bad note {TERMINAL_ATTACKS}")]
    )
    return job_id


@pytest.mark.parametrize(
    "command",
    [
        ["dead", "list"],
        ["dead", "list", "--group-by", "error"],
        ["dead", "show", "JOB"],
        ["events", "list"],
        ["events", "show", "inbound", "evt_term"],
    ],
    ids=lambda c: " ".join(c),
)
def test_human_output_shows_control_characters_escaped(
    hostile_dead_letter: str, command: list[str]
) -> None:
    result = webhooks(*[hostile_dead_letter if a == "JOB" else a for a in command])
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in CONTROL_BYTES), repr(result.output)
    assert "\\x1b[2J\\x1b]0;owned\\x07" in result.output


def test_json_output_stays_exact(hostile_dead_letter: str) -> None:
    shown = json.loads(webhooks("dead", "show", hostile_dead_letter, "--json").stdout)
    assert shown["type"] == "order." + TERMINAL_ATTACKS
    assert json.loads(shown["payload"])["cause"] == f"bad note {TERMINAL_ATTACKS}"


def test_a_job_that_is_not_an_events_is_listed_shown_and_requeued_without_error(
    dead_letters: list[str], redis: Redis
) -> None:
    # Something else enqueued on our queue, failed by the worker as not an event's.
    queue = Queue("webhooks", connection=redis)
    foreign = queue.enqueue("builtins.print", "x")
    redis.lrem(queue.key, 0, foreign.id)
    FailedJobRegistry(queue=queue).add(foreign, exc_string="UnreadableJob: not ours")

    listed = webhooks("dead", "list", "--json")
    assert listed.exit_code == 0, listed.output
    row = next(json.loads(x) for x in listed.stdout.splitlines() if foreign.id in x)
    assert row["error"].startswith("UnreadableJob:") and row["source"] == ""
    shown = webhooks("dead", "show", foreign.id)
    assert shown.exit_code == 0 and "UnreadableJob" in shown.stdout
    requeued = webhooks("dead", "requeue", foreign.id)
    assert requeued.exit_code == 0, requeued.output
    assert queue.job_ids == [foreign.id]
