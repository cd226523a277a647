"""The dead-letter store: the failed registry of the webhook queue.

Kept in RQ's own registry so rq-dashboard shows and requeues the same entries the
`webhooks dead` command does.
"""

from __future__ import annotations

import time
from typing import Any

from redis import Redis
from rq import Queue
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job
from rq.registry import FailedJobRegistry

from app.formats import iso
from app.jobstate import EventStatus, Outcome, UnreadableJob
from app.keys import Keys
from app.logs import log_state
from app.settings import Settings
from workers.ops.dead_letter import DeadLetter, Selection
from workers.ops.ledger import EventLedger
from workers.ops.purge import Purge
from workers.ops.reruns import How, Rerun
from workers.ops.turns_view import attempts_json, states_json, turns_json
from workers.runtime.outcomes import meta_of, read_event, record
from workers.runtime.retries import restore_budget


def dead_letter_of(job: Job) -> DeadLetter:
    try:
        meta = meta_of(job)
    except UnreadableJob as exc:
        # Not an event's job (something else enqueued it on our queue): listed as it is.
        ended = job.ended_at.timestamp() if job.ended_at else None
        return DeadLetter(job.id, "", "", "", 0, f"UnreadableJob: {exc}", iso(ended), ended)
    return DeadLetter(
        job_id=job.id,
        source=meta.source,
        event_id=meta.event_id,
        type=meta.type,
        attempts=meta.attempts,
        error=meta.last_error,
        failed_at=iso(meta.dead_at),
        failed_ts=meta.dead_at,
        handlers=meta.handler_states,
    )


class DeadLetters:
    def __init__(self, settings: Settings, connection: Redis) -> None:
        self.settings = settings
        self.connection = connection
        self.queue = Queue(settings.webhook_queue, connection=connection)
        self.registry = FailedJobRegistry(queue=self.queue)
        self.purger = Purge(settings.keys, connection)

    def ids(self) -> list[str]:
        return [str(i) for i in self.registry.get_job_ids(cleanup=False)]

    def find(self, selection: Selection | None = None) -> list[DeadLetter]:
        ids = self.ids()
        jobs = Job.fetch_many(ids, connection=self.connection) if ids else []
        letters = [dead_letter_of(job) for job in jobs if job is not None]
        return [x for x in letters if selection is None or selection.matches(x)]

    def get(self, job_id: str) -> Job | None:
        if job_id not in self.registry:
            return None
        try:
            return Job.fetch(job_id, connection=self.connection)
        except NoSuchJobError:
            return None

    def requeue(
        self,
        job_id: str,
        by: str = "command",
        all_handlers: bool = False,
        how: How = How.REQUEUE,
    ) -> bool:
        """Requeue one dead letter with its full retry budget; False when it is not one. It
        reruns the handlers that have not succeeded for it, every one with `all_handlers`.
        `by` says who in the `requeued` log line and in the event's record (`reruns.py`):
        the command, the dashboard or rq-dashboard; `how`, whether a replay asked."""
        job = self.get(job_id)
        if job is None:
            return False
        try:
            meta = meta_of(job)
        except UnreadableJob:
            meta = None  # not an event's job: requeued as RQ would, the worker fails it again
        if meta is not None:
            restore_budget(job, meta, self.settings, all_handlers)
            job.meta = meta.to_meta()
        try:
            # RQ saves the whole job (our restored budget and meta included) as it requeues.
            self.registry.requeue(job)
        except InvalidJobOperation:
            return False  # requeued or purged by someone else meanwhile
        if meta is None:
            return True
        # Between the attempt that killed it and the next one (`attempts` counts them all).
        rerun = Rerun(meta.attempts, time.time(), how, by, all_handlers)
        with self.connection.pipeline(transaction=False) as pipe:
            record(pipe, job, meta, EventStatus.QUEUED, Outcome.REQUEUED, **rerun.written())
            pipe.execute()
        log_state("requeued", *meta.labels, job_id=job.id, by=by, all_handlers=all_handlers)
        return True

    def purge(self, job_id: str) -> bool:
        """Delete one dead letter for good; False when it is not one, or no longer (requeued
        since it was listed: then it is left whole). Its event id stays claimed until the
        TTL ends. One atomic step (`purge.py`), as for every purge."""
        return self.purger(job_id)

    def show(self, job_id: str) -> dict[str, Any] | None:
        job = self.get(job_id)
        if job is None:
            return None
        result = job.latest_result()
        try:
            meta, call = read_event(job)
            event = {
                "received_at": iso(meta.received_at),
                "requeues": meta.requeues,
                "permanent": meta.permanent,
                "headers": call.headers,
                "handlers": states_json(meta.handler_states),
                "last_attempt_turns": turns_json(meta.attempt_turns),
                **self._attempts(meta.prefix, meta.source, meta.event_id),
                "payload": call.raw.decode("utf-8", errors="replace"),
            }
        except UnreadableJob:  # not an event's job: what RQ knows of it
            event = {
                "received_at": None,
                "requeues": 0,
                "permanent": False,
                "headers": {},
                "handlers": {},
                "last_attempt_turns": [],
                "attempt_log": None,
                "attempts_left_out": None,
                "payload": "",
            }
        return {
            **dead_letter_of(job).as_dict(),
            **event,
            "traceback": result.exc_string if result is not None else None,
        }

    def _attempts(self, prefix: str, source: str, event_id: str) -> dict[str, Any]:
        """The attempts the event's ledger record keeps; None for both once the record is
        gone (RQ keeps a dead letter a year, the ledger WEBHOOK_LEDGER_TTL)."""
        # Where the worker recorded them: the job's own prefix (none: not the receiver's job).
        ledger = EventLedger(Keys(prefix, ""), self.connection) if prefix else None
        found = ledger.get(source, event_id) if ledger is not None else None
        if found is None:
            return {"attempt_log": None, "attempts_left_out": None}
        return {
            "attempt_log": attempts_json(found.attempt_log),
            "attempts_left_out": found.attempts_left_out,
        }
