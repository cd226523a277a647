"""Worker-side writes of the event ledger and of the outcome counters.

Both ride on the pipeline the worker already sends for the job's own state, so recording
an outcome costs no extra round trip. A ledger record is only updated while it exists: one
that outlived WEBHOOK_LEDGER_TTL is not brought back without its TTL.
"""

from __future__ import annotations

import time
from typing import Any

from redis.client import Pipeline
from rq.job import Job

from app.keys import Keys

UPDATE_IF_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return 0
"""


def labels(job: Job) -> tuple[str, str, str]:
    """Source, event id and type of a job, for log lines."""
    meta = job.meta
    return str(meta.get("source", "")), str(meta.get("event_id", "")), str(meta.get("type", ""))


def keys_of(job: Job) -> Keys | None:
    prefix = job.meta.get("prefix")
    return Keys(str(prefix), job.origin) if prefix else None


def record(
    pipe: Pipeline, job: Job, status: str, outcome: str | None = None, **fields: Any
) -> None:
    """Queue the ledger update and the counter increment of one outcome on `pipe`."""
    keys = keys_of(job)
    if keys is None:
        return
    meta = job.meta
    source, event_id = str(meta.get("source", "")), str(meta.get("event_id", ""))
    values: dict[str, Any] = {"status": status, "attempts": int(meta.get("attempts", 0)), **fields}
    if status in {"done", "ignored", "stale", "dead"}:
        values["settled_at"] = time.time()
    args = [item for key, value in values.items() for item in (key, value)]
    # EVAL with the text, not a registered script: in a pipeline, redis-py checks
    # registered scripts with an extra SCRIPT EXISTS round trip on every execute, while
    # Redis caches the compiled script by its text's hash anyway.
    pipe.eval(UPDATE_IF_PRESENT, 1, keys.event(source, event_id), *args)
    if outcome:
        pipe.hincrby(keys.stats(source), outcome, 1)


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


def _text(value: object) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _record(fields: dict[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = dict(fields)
    for name in ("received_at", "settled_at"):
        if record.get(name):
            record[name] = float(record[name])
    if "attempts" in record:
        record["attempts"] = int(record["attempts"])
    return record


class EventLedger:
    """Reads the ledger: one record per accepted event, kept WEBHOOK_LEDGER_TTL."""

    def __init__(self, keys: Keys, connection: Any) -> None:
        self.keys = keys
        self.connection = connection

    def get(self, source: str, event_id: str) -> dict[str, Any] | None:
        raw = self.connection.hgetall(self.keys.event(source, event_id))
        return _record({_text(k): _text(v) for k, v in raw.items()}) if raw else None

    def find(
        self,
        source: str | None = None,
        status: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[dict[str, Any]]:
        """Records received in [since, until], oldest first, without their payloads."""
        low = since if since is not None else "-inf"
        high = until if until is not None else "+inf"
        keys = self.connection.zrangebyscore(self.keys.events, low, high)
        if source is not None:
            keys = [k for k in keys if _text(k).startswith(self.keys.event(source, ""))]
        with self.connection.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hmget(key, *SUMMARY_FIELDS)
            rows = pipe.execute() if keys else []
        found = []
        for values in rows:
            if values[0] is None:
                continue  # expired since it was indexed
            record = _record(
                {f: _text(v) for f, v in zip(SUMMARY_FIELDS, values, strict=True) if v is not None}
            )
            if status is None or record.get("status") == status:
                found.append(record)
        return found
