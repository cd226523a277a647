"""The Events page's two actions, exactly as the `webhooks` command does them.

- Requeue: a dead letter goes back on the queue with its full retry budget
  (`webhooks dead requeue JOB_ID`).
- Replay: a stored event runs again: a dead letter is requeued, an event whose job is gone is
  enqueued again from the stored payload, a pending one is left alone, one whose payload is
  stored nowhere is not replayed (`webhooks replay ledger`).
Each answers with one of a few fixed outcomes; the page shows a fixed sentence for each, so
nothing a sender wrote is ever reflected from the form.
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
    UNKNOWN = "unknown"


MESSAGES = {
    Done.REQUEUED: "Requeued with its full retry budget.",
    Done.NOT_DEAD: "Not requeued: this event is not a dead letter (any more).",
    Done.ENQUEUED: "Enqueued again from the stored payload.",
    Done.PENDING: "Not replayed: this event is still queued, running or waiting for a retry.",
    Done.NO_PAYLOAD: "Not replayed: its payload is stored nowhere any more (RQ no longer has "
    "its job, and its ledger record holds no copy).",
    Done.UNKNOWN: "No such event in the ledger (not received, or older than WEBHOOK_LEDGER_TTL).",
}


def requeue(settings: Settings, redis: Redis, record: LedgerRecord) -> Done:
    requeued = DeadLetters(settings, redis).requeue(record.job_id, by="dashboard")
    return Done.REQUEUED if requeued else Done.NOT_DEAD


def replay(settings: Settings, redis: Redis, record: LedgerRecord) -> Done:
    source = settings.sources[record.source]
    done = LedgerReplay(settings, redis, by="dashboard").replay(source, record)
    return {
        Replayed.REQUEUED: Done.REQUEUED,
        Replayed.ENQUEUED: Done.ENQUEUED,
        Replayed.PENDING: Done.PENDING,
        Replayed.NO_PAYLOAD: Done.NO_PAYLOAD,
    }[done]
