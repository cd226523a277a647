"""One event, as its page shows it: the ledger record, and what its RQ job still holds.

The record has the status, attempts (each handler's turn at each, `attempts.py`), where
each handler stands, last error, times and the payload as received. The job, while RQ
keeps it, adds the provider headers that matter and the last traceback, split into the
user's frames and the full one (`workers/runtime/tracebacks.py`) (and, for a record
without turns, each attempt RQ recorded). Nothing here is trusted: the template escapes
every value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from redis import Redis
from rq.exceptions import DeserializationError, NoSuchJobError
from rq.job import Job

from app.formats import iso
from app.jobstate import PENDING, EventCall, PayloadFormat
from workers.ops.events_page.attempts import (
    RqAttempt,
    TurnRow,
    earlier_note,
    rq_attempts,
    rq_note,
    turn_rows,
)
from workers.ops.events_page.rerun_rows import RerunRow
from workers.ops.ledger import LedgerRecord
from workers.runtime.tracebacks import TracebackParts, split_traceback

# Past this size the page shows the start of the payload (the command shows all of it).
SHOWN_PAYLOAD = 256 * 1024


@dataclass(frozen=True, slots=True)
class Payload:
    text: str
    kind: str  # "JSON", "form", "text" or "binary (base64)"
    size: int
    cut: bool


@dataclass(frozen=True, slots=True)
class EventDetail:
    record: LedgerRecord
    payload: Payload
    job_status: str | None = None  # None: RQ no longer has the job
    headers: dict[str, str] = field(default_factory=dict)
    turns: tuple[TurnRow | RerunRow, ...] = ()  # from the record, with its reruns
    rq_attempts: tuple[RqAttempt, ...] = ()  # from RQ, for a record without turns
    note: str | None = None  # which attempts the list leaves out
    traceback: TracebackParts | None = None  # the user's frames first, when stored so
    dead_letter: bool = False
    enqueued_at: float | None = None  # when RQ last put the job on the queue

    @property
    def handlers(self) -> list[tuple[str, str]]:
        return [(name, str(state)) for name, state in self.record.handlers.items()]


def payload_of(record: LedgerRecord) -> Payload:
    raw = record.payload or b""
    size = len(raw)
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        import base64

        encoded = base64.b64encode(raw[:SHOWN_PAYLOAD]).decode()
        return Payload(encoded, "binary (base64)", size, size > SHOWN_PAYLOAD)
    if record.payload_format is PayloadFormat.JSON and size <= SHOWN_PAYLOAD:
        try:
            parsed = json.loads(decoded)
            pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
            if not pretty.isascii():
                try:
                    pretty.encode()
                except UnicodeEncodeError:  # a lone surrogate (`"\ud800"` is valid JSON)
                    pretty = json.dumps(parsed, indent=2)
            return Payload(pretty, "JSON", size, False)
        except ValueError:
            pass
    kind = "form" if record.payload_format is PayloadFormat.FORM else "text"
    return Payload(decoded[:SHOWN_PAYLOAD], kind, size, size > SHOWN_PAYLOAD)


def load_detail(connection: Redis, record: LedgerRecord, failed_key: str) -> EventDetail:
    payload = payload_of(record)
    turns, note = turn_rows(record), earlier_note(record)
    try:
        job = Job.fetch(record.job_id, connection=connection)
    except NoSuchJobError:
        return EventDetail(record, payload, turns=turns, note=note)
    try:
        headers = dict(EventCall.from_args(job.args).headers)
    except (TypeError, ValueError, DeserializationError):
        headers = {}
    attempts, traceback = rq_attempts(job)
    if not record.attempt_log and attempts:
        note = rq_note(record, len(attempts))
    dead = connection.zscore(failed_key, job.id) is not None
    status = job.get_status(refresh=False)
    return EventDetail(
        record,
        payload,
        job_status=str(getattr(status, "value", status) or "-"),
        headers=headers,
        turns=turns,
        rq_attempts=() if record.attempt_log else attempts,
        note=note,
        traceback=split_traceback(traceback) if traceback else None,
        dead_letter=dead,
        enqueued_at=job.enqueued_at.timestamp() if job.enqueued_at else None,
    )


def settled_text(record: LedgerRecord, queued_at: float | None) -> str:
    """The page's *settled*: when it settled, or that it has not. A requeue or a replay
    sets the record's status back to queued and leaves `settled_at` as the last run
    wrote it: shown as settled, that time would say the new run is over."""
    if record.status not in PENDING:
        return iso(record.settled_at) or "-"
    if record.settled_at is None:
        return "- (not yet)"
    when = f" at {iso(queued_at)}" if queued_at is not None else ""
    return f"- (queued again{when}; not settled yet)"
