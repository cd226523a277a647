"""Bulk dead-letter handling for the 3 a.m. case: select, dry-run, group by error."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import SYNC_CRM, Harness, webhooks
from tests.purge_race import (
    EVENT_ID,
    EVENT_TYPE,
    JOB_ID,
    assert_requeued_and_runs_once,
    flaky_handler,
    requeued_before_the_purge_writes,
)
from workers.ops.deadletters import DeadLetters


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


def test_a_purge_skips_a_letter_requeued_after_it_was_listed(
    make_harness: Callable[..., Harness],
    cli_env: Callable[[Settings], None],
    redis: Redis,
    tmp_path: Path,
) -> None:
    harness = make_harness(webhook_max_retries=0)
    cli_env(harness.settings)
    state = flaky_handler(tmp_path)
    for event_id in ("evt_other", EVENT_ID):
        assert harness.event(event_id, EVENT_TYPE).status_code == 200
    harness.drain()
    assert redis.zcard("rq:failed:webhooks") == 2
    with requeued_before_the_purge_writes(harness.settings):
        result = webhooks("dead", "purge", "--all", "--yes")
    assert result.stdout == "purged 1 dead letter, 1 skipped\n", result.output
    assert f"not dead letters (skipped): {JOB_ID}" in result.stderr
    assert result.exit_code == 1
    assert redis.exists("rq:job:" + job_id_for("inbound", "evt_other")) == 0
    assert_requeued_and_runs_once(redis, state, harness.drain)


def keys_of(redis: Redis, job_id: str) -> dict[str, bytes]:
    """Every key that names the job, with the id written `<id>`, and its type."""
    found = {key.decode(): redis.type(key) for key in redis.keys(f"*{job_id}*")}
    return {key.replace(job_id, "<id>"): kind for key, kind in found.items()}


def test_a_purge_deletes_what_rqs_remove_with_delete_job_deletes(
    dead_letters: list[str], redis: Redis, make_settings: Callable[..., Settings]
) -> None:
    ours, rqs = dead_letters[0], dead_letters[1]
    before = keys_of(redis, ours)
    assert before == keys_of(redis, rqs) and "rq:job:<id>" in before
    assert "rq:results:<id>" in before  # the failure's result, which RQ deletes too
    registry = FailedJobRegistry("webhooks", connection=redis)
    registry.remove(Job.fetch(rqs, connection=redis), delete_job=True)
    assert DeadLetters(make_settings(), redis).purge(ours)
    assert keys_of(redis, ours) == keys_of(redis, rqs) == {}
    assert set(registry.get_job_ids()) == set(dead_letters[2:])
    # The ledger records stay as they were: dead, each with its payload for a replay.
    for event_id in ("e0", "e1"):
        record = f"webhook:event:inbound:{event_id}"
        assert redis.hget(record, "status") == b"dead" and redis.hexists(record, "payload")
    assert webhooks("dead", "purge", ours).exit_code == 1  # no longer a dead letter


def test_a_purge_deletes_a_dead_letters_executions_as_rq_does(
    dead_letters: list[str], redis: Redis, make_settings: Callable[..., Settings]
) -> None:
    """A dead letter with an execution still registered (its worker died as it settled):
    the purge deletes it as RQ's `Job.delete()` does, from the started registry and from
    its worker's set too."""
    ours, rqs = dead_letters[0], dead_letters[1]
    live = time.time() + 60
    for job_id in (ours, rqs):
        member = f"{job_id}:x1"
        fields = {"id": "x1", "worker_name": "w1", "created_at": 1, "last_heartbeat": 1}
        redis.hset(f"rq:execution:{member}", mapping=fields)
        redis.zadd(f"rq:executions:{job_id}", {"x1": live})
        redis.zadd("rq:wip:webhooks", {member: live})
        redis.sadd("rq:worker:w1:executions", member)
    redis.sadd("rq:worker:w1:executions", "other:x2")
    registry = FailedJobRegistry("webhooks", connection=redis)
    registry.remove(Job.fetch(rqs, connection=redis), delete_job=True)
    assert DeadLetters(make_settings(), redis).purge(ours)
    assert keys_of(redis, ours) == keys_of(redis, rqs) == {}
    assert redis.zcard("rq:wip:webhooks") == 0
    assert redis.smembers("rq:worker:w1:executions") == {b"other:x2"}
