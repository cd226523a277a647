"""The Events page's two actions, exactly as the `webhooks` command does them.

- Requeue: a dead letter goes back on the queue with its full retry budget
  (`webhooks dead requeue JOB_ID`).
- Replay: a stored event runs again: a dead letter is requeued, an event whose job is gone is
  enqueued again from the stored payload, a pending one is left alone, one whose payload is
  stored nowhere is not replayed (`webhooks replay ledger`).
Each reruns the event's handlers that have not succeeded, or, with `all_handlers` (the
command's `--all-handlers`), every one. Each answers with one of a few fixed outcomes; the
page shows a fixed sentence for each, so nothing a sender wrote is ever reflected from the
form.
"""

from __future__ import annotations

from enum import StrEnum

from redis import Redis

from app.settings import Settings
from workers.ops.deadletters import DeadLetters
from workers.ops.ledger import LedgerRecord
from workers.ops.replay import LedgerReplay, Replayed


class Done(StrEnum):
    REQUEUED = "requeued"
    NOT_DEAD = "not-dead"
    ENQUEUED = "enqueued"
    PENDING = "pending"
    NO_PAYLOAD = "no-payload"
    UNTRACKED = "untracked"
    UNKNOWN = "unknown"


MESSAGES = {
    Done.REQUEUED: "Requeued with its full retry budget.",
    Done.NOT_DEAD: "Not requeued: this event is not a dead letter (any more).",
    Done.ENQUEUED: "Enqueued again from the stored payload.",
    Done.PENDING: "Not replayed: this event is still queued, running or waiting for a retry.",
    Done.NO_PAYLOAD: "Not replayed: its payload is stored nowhere any more (RQ no longer has "
    "its job, and its ledger record holds no copy).",
    Done.UNTRACKED: "Not replayed: it settled before the worker kept each handler's state, so "
    "which of its handlers ran is unknown. Replay, all handlers runs every one again.",
    Done.UNKNOWN: "No such event in the ledger (not received, or older than WEBHOOK_LEDGER_TTL).",
}
# What runs again, after the sentence of an outcome that queued the event.
RERUN = {
    False: "Only its handlers that have not succeeded run again.",
    True: "Every handler runs again, those that succeeded too.",
}


def message(done: Done, all_handlers: bool) -> str:
    if done in (Done.REQUEUED, Done.ENQUEUED):
        return f"{MESSAGES[done]} {RERUN[all_handlers]}"
    return MESSAGES[done]


def requeue(settings: Settings, redis: Redis, record: LedgerRecord, all_handlers: bool) -> Done:
    dead = DeadLetters(settings, redis)
    requeued = dead.requeue(record.job_id, by="dashboard", all_handlers=all_handlers)
    return Done.REQUEUED if requeued else Done.NOT_DEAD


def replay(settings: Settings, redis: Redis, record: LedgerRecord, all_handlers: bool) -> Done:
    source = settings.sources[record.source]
    replayer = LedgerReplay(settings, redis, by="dashboard", all_handlers=all_handlers)
    done = replayer.replay(source, record)
    return {
        Replayed.REQUEUED: Done.REQUEUED,
        Replayed.ENQUEUED: Done.ENQUEUED,
        Replayed.PENDING: Done.PENDING,
        Replayed.NO_PAYLOAD: Done.NO_PAYLOAD,
        Replayed.UNTRACKED: Done.UNTRACKED,
    }[done]
