"""The `webhooks` command and per-handler retries: where each handler of an event stands,
its turns at each attempt, and which handlers a requeue or a replay runs again."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import Harness, webhooks
from workers import Event, handler

RECORD = "tests.test_cli_handlers.record_order"
NOTIFY = "tests.test_cli_handlers.notify_crm"
DOWN = "crm-down"  # while set, notify_crm fails
JOB = job_id_for("inbound", "evt_1")


def _count(name: str) -> Redis:
    # The handlers run in the worker's forked child: they count in Redis, the one the
    # command is pointed at (`cli_env`).
    connection = Redis.from_url(os.environ["REDIS_URL"])
    connection.incr(f"runs:{name}")
    return connection


def record_order(event: Event) -> None:
    _count("record_order")


def notify_crm(event: Event) -> None:
    if _count("notify_crm").exists(DOWN):
        # The message is the provider's: its payload says what went wrong.
        raise RuntimeError(event.payload.get("note", "crm down"))


def runs(redis: Redis) -> tuple[int, int]:
    """How many times record_order and notify_crm ran."""
    recorded, notified = (int(redis.get(f"runs:{n}") or 0) for n in ("record_order", "notify_crm"))
    return recorded, notified


@pytest.fixture
def harness(make_harness: Callable[..., Harness], cli_env: Callable[[Settings], None]) -> Harness:
    harness = make_harness()  # 2 retries: 3 attempts, no wait between them
    cli_env(harness.settings)
    handler("inbound", "order.created")(record_order)
    handler("inbound", "order.created")(notify_crm)
    return harness


@pytest.fixture
def dead_event(harness: Harness, redis: Redis) -> Harness:
    """evt_1: record_order succeeded on attempt 1, notify_crm failed all 3 attempts."""
    redis.set(DOWN, 1)
    harness.event("evt_1")
    harness.drain()
    assert runs(redis) == (1, 3)
    return harness


def test_events_show_json_names_each_handler_and_its_turn_at_each_attempt(
    dead_event: Harness,
) -> None:
    result = webhooks("events", "show", "inbound", "evt_1", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["handlers"] == {RECORD: "done", NOTIFY: "failed"}
    assert [(a["attempt"], a["status"]) for a in shown["attempt_log"]] == [
        (1, "retrying"),
        (2, "retrying"),
        (3, "dead"),
    ]
    failed = {"handler": NOTIFY, "state": "failed", "error": "RuntimeError: crm down"}
    assert shown["attempt_log"][0]["turns"] == [
        {"handler": RECORD, "state": "done", "error": ""},
        failed,
    ]
    assert [a["turns"] for a in shown["attempt_log"][1:]] == [[failed], [failed]]
    assert shown["attempt_log"][2]["error"] == f"{NOTIFY}: RuntimeError: crm down"
    assert shown["attempt_log"][0]["ended_at"].endswith("+00:00")
    assert shown["attempts_left_out"] == 0
    # What the command printed before stays as it was.
    assert (shown["status"], shown["attempts"], shown["job_id"]) == ("dead", 3, JOB)
    assert json.loads(shown["payload"])["id"] == "evt_1"


def test_events_show_prints_a_line_per_turn_and_says_how_many_attempts_it_left_out(
    dead_event: Harness, redis: Redis
) -> None:
    redis.hdel("webhook:event:inbound:evt_1", "run:1")  # as if past the attempts kept
    result = webhooks("events", "show", "inbound", "evt_1")
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.stdout.splitlines()]
    assert [RECORD, "done"] in lines and [NOTIFY, "failed"] in lines
    turns = [line for line in lines if line[:1] in (["2"], ["3"])]
    assert [(t[0], t[2], t[3], " ".join(t[4:])) for t in turns] == [
        ("2", NOTIFY, "failed", "RuntimeError: crm down"),
        ("3", NOTIFY, "failed", "RuntimeError: crm down"),
    ]
    assert "1 earlier attempt not kept" in result.stdout


def test_events_show_prints_an_attempt_without_turns_as_one_line_with_its_status(
    harness: Harness,
) -> None:
    harness.event("evt_none", "unhandled")
    harness.drain()
    result = webhooks("events", "show", "inbound", "evt_none")
    assert result.exit_code == 0, result.output
    [line] = [line.split() for line in result.stdout.splitlines() if line.split()[:1] == ["1"]]
    assert (line[2], line[3], line[4]) == ("-", "ignored", "-")


def test_dead_show_names_the_failed_handler_and_the_one_that_succeeded(
    dead_event: Harness,
) -> None:
    shown = json.loads(webhooks("dead", "show", JOB, "--json").stdout)
    assert shown["handlers"] == {RECORD: "done", NOTIFY: "failed"}
    assert shown["last_attempt_turns"] == [
        {"handler": NOTIFY, "state": "failed", "error": "RuntimeError: crm down"}
    ]
    assert [a["attempt"] for a in shown["attempt_log"]] == [1, 2, 3]
    assert shown["attempts_left_out"] == 0
    text = webhooks("dead", "show", JOB)
    assert text.exit_code == 0, text.output
    lines = [line.split() for line in text.stdout.splitlines()]
    assert [RECORD, "done"] in lines and [NOTIFY, "failed"] in lines
    assert [NOTIFY, "failed", "RuntimeError:", "crm", "down"] in lines  # the last attempt
    # The ledger's attempts: attempt 1 ran both.
    assert any(line[:1] == ["1"] and line[2:] == [RECORD, "done", "-"] for line in lines)


def test_dead_show_says_when_the_ledger_no_longer_keeps_the_events_attempts(
    dead_event: Harness, redis: Redis
) -> None:
    redis.delete("webhook:event:inbound:evt_1")  # past WEBHOOK_LEDGER_TTL
    shown = json.loads(webhooks("dead", "show", JOB, "--json").stdout)
    assert shown["handlers"] == {RECORD: "done", NOTIFY: "failed"}
    assert (shown["attempt_log"], shown["attempts_left_out"]) == (None, None)
    assert "no longer kept in the ledger" in webhooks("dead", "show", JOB).stdout


def test_dead_list_json_names_the_handlers_that_have_not_succeeded(dead_event: Harness) -> None:
    [row] = [json.loads(line) for line in webhooks("dead", "list", "--json").stdout.splitlines()]
    assert row["failed_handlers"] == [NOTIFY]
    assert {"job_id", "source", "event_id", "type", "attempts", "error"} <= set(row)


def test_dead_requeue_reruns_only_the_handler_that_has_not_succeeded(
    dead_event: Harness, redis: Redis
) -> None:
    redis.delete(DOWN)
    assert webhooks("dead", "requeue", JOB).exit_code == 0
    dead_event.drain()
    assert runs(redis) == (1, 4)
    assert Job.fetch(JOB, connection=redis).meta["handlers"] == {RECORD: "done", NOTIFY: "done"}


def test_dead_requeue_all_handlers_reruns_every_handler(dead_event: Harness, redis: Redis) -> None:
    redis.delete(DOWN)
    assert webhooks("dead", "requeue", "--all-handlers", JOB).exit_code == 0
    dead_event.drain()
    assert runs(redis) == (2, 4)


def test_dead_requeue_all_handlers_applies_to_a_selection(
    dead_event: Harness, redis: Redis
) -> None:
    redis.delete(DOWN)
    result = webhooks("dead", "requeue", "--all-handlers", "--source", "inbound")
    assert result.exit_code == 0 and "requeued 1" in result.stdout
    dead_event.drain()
    assert runs(redis) == (2, 4)


def test_dead_requeue_dry_run_says_which_handlers_would_rerun_and_changes_nothing(
    dead_event: Harness, redis: Redis
) -> None:
    before = redis.hget(f"rq:job:{JOB}", "meta")
    failed_only = webhooks("dead", "requeue", JOB, "--dry-run", "--json")
    assert failed_only.exit_code == 0, failed_only.output
    row = json.loads(failed_only.stdout)
    assert (row["rerun_handlers"], row["kept_handlers"]) == ([NOTIFY], [RECORD])
    every = webhooks("dead", "requeue", "--all", "--dry-run", "--all-handlers", "--json")
    row = json.loads(every.stdout)
    assert (row["rerun_handlers"], row["kept_handlers"]) == ([RECORD, NOTIFY], [])
    text = webhooks("dead", "requeue", "--all", "--dry-run").stdout.splitlines()
    reruns = text[0].index("RERUNS")
    assert text[1][reruns:].split()[0] == NOTIFY and text[-1] == "would requeue 1 dead letter"
    text = webhooks("dead", "requeue", JOB, "--dry-run", "--all-handlers").stdout.splitlines()
    assert text[1][text[0].index("RERUNS") :].split()[0] == "all"
    assert FailedJobRegistry("webhooks", connection=redis).get_job_ids() == [JOB]
    assert len(Queue("webhooks", connection=redis)) == 0
    assert redis.hget(f"rq:job:{JOB}", "meta") == before
    assert runs(redis) == (1, 3)


@pytest.fixture
def done_and_gone(harness: Harness, redis: Redis) -> Harness:
    """evt_1 settled done, both handlers having run once; RQ has since dropped its job."""
    harness.event("evt_1")
    harness.drain()
    redis.delete(f"rq:job:{JOB}")
    assert runs(redis) == (1, 1)
    return harness


def _replay(*extra: str) -> dict[str, int]:
    since = str(time.time() - 600)
    result = webhooks("replay", "ledger", "inbound", "--since", since, "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_replay_ledger_all_handlers_reruns_every_handler_of_a_done_event(
    done_and_gone: Harness, redis: Redis
) -> None:
    assert _replay("--all-handlers")["enqueued"] == 1
    done_and_gone.drain()
    assert runs(redis) == (2, 2)


def test_replay_ledger_reruns_none_of_the_handlers_that_succeeded(
    done_and_gone: Harness, redis: Redis
) -> None:
    assert _replay()["enqueued"] == 1
    done_and_gone.drain()
    assert runs(redis) == (1, 1)
    shown = json.loads(webhooks("events", "show", "inbound", "evt_1", "--json").stdout)
    assert shown["status"] == "done"


def test_a_done_event_settled_before_handlers_were_tracked_is_replayed_only_with_all_handlers(
    done_and_gone: Harness, redis: Redis
) -> None:
    key = "webhook:event:inbound:evt_1"
    redis.hdel(key, "handlers", *[f for f in redis.hkeys(key) if f.startswith(b"run:")])
    counts = _replay()
    assert (counts["untracked"], counts["enqueued"], counts["new"]) == (1, 0, 0)
    done_and_gone.drain()
    assert runs(redis) == (1, 1)
    assert _replay("--all-handlers")["enqueued"] == 1
    done_and_gone.drain()
    assert runs(redis) == (2, 2)


def test_a_replay_counts_its_attempts_on_from_the_records_and_keeps_the_earlier_ones(
    done_and_gone: Harness, redis: Redis
) -> None:
    assert _replay("--all-handlers")["enqueued"] == 1
    done_and_gone.drain()
    shown = json.loads(webhooks("events", "show", "inbound", "evt_1", "--json").stdout)
    assert shown["attempts"] == 2
    assert [a["attempt"] for a in shown["attempt_log"]] == [1, 2]
    assert [len(a["turns"]) for a in shown["attempt_log"]] == [2, 2]


# A handler's error carries the provider's text: clear the screen, break the line, go back
# to its start and overwrite it.
HOSTILE = "crm said \x1b[2J\nFAKE: all good\rok"


@pytest.mark.parametrize(
    "command", [["events", "show", "inbound", "evt_1"], ["dead", "show", JOB]], ids=" ".join
)
def test_a_hostile_error_in_a_handlers_turn_is_shown_neutralised(
    harness: Harness, redis: Redis, command: list[str]
) -> None:
    redis.set(DOWN, 1)
    harness.event("evt_1", note=HOSTILE)
    harness.drain()
    result = webhooks(*command)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    # The fields and the handlers' turns come before the payload (and the traceback, whose
    # lines stay lines): there, the error's newline is shown, never obeyed.
    fields = result.stdout.split("\npayload:\n")[0].splitlines()
    assert not any(line.startswith("FAKE") for line in fields)
    shown = [line for line in fields if "crm said" in line]
    neutralised = "RuntimeError: crm said \\x1b[2J\\x0aFAKE: all good\\x0dok"
    assert len(shown) >= 4 and all(neutralised in line for line in shown)  # error, 3 turns
