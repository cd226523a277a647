"""One event, as its page shows it: the ledger record, and what its RQ job still holds.

The record has the status, attempts, last error, times and the payload as received. The job,
while RQ keeps it, adds the provider headers that matter and each attempt RQ recorded (with
the last traceback). Nothing here is trusted: the template escapes every value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from redis import Redis
from rq.exceptions import DeserializationError, NoSuchJobError
from rq.job import Job
from rq.results import Result

from app.formats import iso
from app.jobstate import EventCall, PayloadFormat
from workers.ops.ledger import LedgerRecord
from workers.runtime.outcomes import last_error

# Past this size the page shows the start of the payload (the command shows all of it).
SHOWN_PAYLOAD = 256 * 1024


@dataclass(frozen=True, slots=True)
class Attempt:
    when: str
    outcome: str
    error: str


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
    attempts: tuple[Attempt, ...] = ()
    traceback: str | None = None
    dead_letter: bool = False


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


def _attempts(job: Job) -> tuple[tuple[Attempt, ...], str | None]:
    results = Result.all(job)  # newest first
    attempts = tuple(
        Attempt(
            when=iso(result.created_at.timestamp()) or "-",
            outcome=Result.Type(result.type).name.lower().replace("_", " "),
            error=last_error(result.exc_string) if result.exc_string else "",
        )
        for result in results
    )
    traceback = next((r.exc_string for r in results if r.exc_string), None)
    return attempts, traceback


def load_detail(connection: Redis, record: LedgerRecord, failed_key: str) -> EventDetail:
    payload = payload_of(record)
    try:
        job = Job.fetch(record.job_id, connection=connection)
    except NoSuchJobError:
        return EventDetail(record, payload)
    try:
        headers = dict(EventCall.from_args(job.args).headers)
    except (TypeError, ValueError, DeserializationError):
        headers = {}
    attempts, traceback = _attempts(job)
    dead = connection.zscore(failed_key, job.id) is not None
    status = job.get_status(refresh=False)
    return EventDetail(
        record,
        payload,
        job_status=str(getattr(status, "value", status) or "-"),
        headers=headers,
        attempts=attempts,
        traceback=traceback,
        dead_letter=dead,
    )
