"""Reading the event ledger: one record per accepted event, kept WEBHOOK_LEDGER_TTL.

The receiver's claim script writes each record and the worker updates it
(`workers/runtime/outcomes.py`); this module only reads, for the `webhooks events` and
`webhooks replay ledger` commands and the dashboard.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, cast

from redis import Redis

from app.formats import iso, text
from app.jobstate import EventCall, EventStatus, PayloadFormat
from app.keys import Keys, job_id_for
from app.turns import AttemptRecord, HandlerState, attempts_of, lasting_states, states_of
from workers.ops.reruns import Rerun, reruns_of

# A W3C traceparent, version 00: its trace id.
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")

SUMMARY_FIELDS = (
    "source",
    "id",
    "type",
    "status",
    "attempts",
    "last_error",
    "received_at",
    "settled_at",
    "job_id",
)


_KNOWN = frozenset(str(status) for status in EventStatus)


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    source: str
    id: str
    type: str
    # A status this version does not know (a newer one wrote it) stays its text: shown as
    # it is, never taken for pending or settled.
    status: EventStatus | str
    attempts: int
    received_at: float
    job_id: str
    last_error: str = ""
    settled_at: float | None = None
    # The verified bytes, exactly as received, and how they parse; only `get` reads them.
    payload: bytes | None = None
    payload_format: PayloadFormat = PayloadFormat.JSON
    # Only `get` reads these: where each handler stands, and the attempts kept (the last
    # KEPT_ATTEMPTS; `attempts` counts them all), each with its handlers' turns.
    handlers: dict[str, HandlerState] = field(default_factory=dict)
    attempt_log: tuple[AttemptRecord, ...] = ()
    # The delivery's trace (`app/tracing.py`), for a replay to link to; '' when untraced.
    trace: str = ""
    # Only `get` reads these: each requeue or replay an operator made, oldest first.
    reruns: tuple[Rerun, ...] = ()

    @property
    def attempts_left_out(self) -> int:
        """The attempts before the oldest one the record details: no longer kept, or ended
        before records kept attempts. Counted from the oldest kept attempt's number, not
        from `attempts`, which counts an attempt still running (kept once it ends)."""
        if self.attempt_log:
            return self.attempt_log[0].number - 1
        running = self.status == EventStatus.RUNNING
        return max(self.attempts - (1 if running else 0), 0)

    @classmethod
    def from_fields(cls, fields: dict[str, bytes]) -> LedgerRecord:
        def string(name: str) -> str:
            value = fields.get(name)
            return text(value) if value is not None else ""

        settled = string("settled_at")
        attempt_log = attempts_of(fields)
        status = string("status") or EventStatus.QUEUED
        return cls(
            source=string("source"),
            id=string("id"),
            type=string("type"),
            status=EventStatus(status) if status in _KNOWN else status,
            attempts=int(string("attempts") or 0),
            received_at=float(string("received_at") or 0),
            # Records written before the job id was left out carry it.
            job_id=string("job_id") or job_id_for(string("source"), string("id")),
            last_error=string("last_error"),
            settled_at=float(settled) if settled else None,
            payload=fields.get("payload"),
            # Written by the claim script only, which stores no field for JSON.
            payload_format=PayloadFormat.FORM if string("format") == "form" else PayloadFormat.JSON,
            handlers=_handlers(fields.get("handlers")) or lasting_states(attempt_log),
            trace=string("trace"),
            attempt_log=attempt_log,
            reruns=reruns_of(fields),
        )

    @property
    def trace_id(self) -> str:
        """The delivery's trace id (tracing on: `app/tracing.py`); '' when it has none."""
        found = _TRACEPARENT.fullmatch(self.trace)
        return found.group(1) if found else ""

    def summary(self) -> dict[str, Any]:
        """The record as JSON-ready fields with ISO 8601 times, without the payload."""
        return {
            "source": self.source,
            "id": self.id,
            "type": self.type,
            "status": str(self.status),
            "attempts": self.attempts,
            "last_error": self.last_error,
            "received_at": iso(self.received_at),
            "settled_at": iso(self.settled_at),
            "job_id": self.job_id,
        }


def _handlers(raw: bytes | None) -> dict[str, HandlerState]:
    if not raw:
        return {}
    try:
        return states_of(json.loads(raw))
    except ValueError:
        return {}


class EventLedger:
    def __init__(self, keys: Keys, connection: Redis) -> None:
        self.keys = keys
        self.connection = connection

    def get(self, source: str, event_id: str) -> LedgerRecord | None:
        """One record, with its payload: from the record once the event settled, from its
        job's call data before (the payload is stored once)."""
        key = self.keys.event(source, event_id)
        fields = cast(dict[bytes, bytes], self.connection.hgetall(key))
        if not fields:
            return None
        record = LedgerRecord.from_fields({text(k): v for k, v in fields.items()})
        if record.payload is None and record.job_id:
            # Here, not at import: a command over a cluster's shards reads records in the
            # parent, and rq is imported under each shard's prefix (`shard_fanout.py`).
            from rq.exceptions import NoSuchJobError
            from rq.job import Job

            try:
                job = Job.fetch(record.job_id, connection=self.connection)
                record = replace(record, payload=EventCall.from_args(job.args).raw)
            except (NoSuchJobError, ValueError):
                pass  # the job is gone and the event never settled: no payload is kept
        return record

    def source_and_id(self, record_key: str) -> tuple[str, str] | None:
        """The source and event id a record key names (`<prefix>:event:<source>:<id>`): a
        source name holds no `:`, an event id may."""
        head = f"{self.keys.prefix}:event:"
        if not record_key.startswith(head):
            return None
        source, colon, event_id = record_key[len(head) :].partition(":")
        return (source, event_id) if colon else None

    def summaries(self, record_keys: list[str]) -> list[LedgerRecord | None]:
        """The records of these keys, without payloads, in one round trip; None for a
        record that expired since it was indexed."""
        with self.connection.pipeline(transaction=False) as pipe:
            for key in record_keys:
                pipe.hmget(key, *SUMMARY_FIELDS)
            rows = pipe.execute() if record_keys else []
        return [
            LedgerRecord.from_fields(
                {f: v for f, v in zip(SUMMARY_FIELDS, values, strict=True) if v is not None}
            )
            if values[0] is not None
            else None
            for values in rows
        ]

    def find(
        self,
        source: str | None = None,
        status: EventStatus | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[LedgerRecord]:
        """Records received in [since, until], oldest first, without their payloads."""
        low = since if since is not None else "-inf"
        high = until if until is not None else "+inf"
        keys = cast(list[bytes], self.connection.zrangebyscore(self.keys.events, low, high))
        names = [text(k) for k in keys]
        if source is not None:
            names = [k for k in names if k.startswith(self.keys.event(source, ""))]
        return [
            record
            for record in self.summaries(names)
            if record is not None and (status is None or record.status == status)
        ]
