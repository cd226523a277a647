"""What the worker records when an attempt starts or settles: the job's meta, the ledger
record, the outcome counters, and one log line per terminal state.

The writes are queued on whatever the caller sends them with (a pipeline, or the batch
runner's stream of commands whose replies it reads later), so a state change never costs a
round trip of its own. A ledger record is only updated while it exists: one that outlived
WEBHOOK_LEDGER_TTL is not brought back without its TTL. A settled event's payload is
written into its record then: until it settles, the job holds the only copy.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from rq.job import Job

from app.jobhash import JOB_FUNCTIONS
from app.jobstate import EventCall, EventStatus, JobMeta, Outcome, UnreadableJob
from app.keys import Keys
from app.logs import log_state
from app.turns import attempt_json, encode_json, failure_summary, run_field, told_by_turns
from app.type_stats import count_command
from workers.runtime.attempt import HandlersFailed

# Where `HandlersFailed` is defined, and where it was until issue 38.
HANDLERS_FAILED_MODULES = (HandlersFailed.__module__, "workers.registry")

UPDATE_IF_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return 0
"""


class Commands(Protocol):
    """A pipeline, or anything else that queues Redis commands."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...


def meta_of(job: Job) -> JobMeta:
    return JobMeta.from_meta(job.meta)


def read_event(job: Job) -> tuple[JobMeta, EventCall]:
    """The job's meta and call; UnreadableJob when it is not an event's job (enqueued on
    the queue by something else, or damaged), which must not run nor stop the others."""
    try:
        if job.func_name not in JOB_FUNCTIONS:
            raise UnreadableJob(f"its function is {job.func_name!r}, not the webhook receiver's")
        return meta_of(job), EventCall.from_args(job.args)
    except UnreadableJob:
        raise
    except Exception as exc:  # anything unpickling a damaged hash may raise
        raise UnreadableJob(f"its data cannot be read ({type(exc).__name__})") from None


def attempt_error(meta: JobMeta, exc_string: str) -> str:
    """An attempt's error as recorded: `handler: error` for each handler that failed, or,
    when the attempt ended otherwise (the worker died, the job was unreadable), the last
    line of its traceback."""
    summary = failure_summary(meta.turns)
    return _cut(summary) if summary else last_error(exc_string)


def last_error(exc_string: str, limit: int = 500) -> str:
    """The last non-empty line of a traceback: the exception and its message."""
    lines = [line.strip() for line in exc_string.strip().splitlines() if line.strip()]
    found = lines[-1] if lines else "unknown error"
    # Not `workers.runtime.attempt.HandlersFailed: ...`: the module says nothing to an
    # operator (nor the one that defined it when older dead letters were stored).
    for module in HANDLERS_FAILED_MODULES:
        found = found.removeprefix(module + ".")
    return _cut(found, limit)


def _cut(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "~"


def save_meta(commands: Commands, job: Job, meta: JobMeta) -> None:
    """`job.save_meta()`, queued."""
    job.meta = meta.to_meta()
    commands.execute_command("HSET", job.key, "meta", job.serializer.dumps(job.meta))


def record(
    commands: Commands,
    job: Job,
    meta: JobMeta,
    status: EventStatus,
    outcome: Outcome | None = None,
    **fields: Any,
) -> None:
    """Queue the ledger update and the counter increment of one outcome. Only an event's
    job comes here: its meta names its prefix (`JobMeta.from_meta` requires one)."""
    keys = Keys(meta.prefix, job.origin)
    values: dict[str, Any] = {"status": str(status), "attempts": meta.attempts, **fields}
    if status.settled:
        values["settled_at"] = time.time()
    args = [item for key, value in values.items() for item in (key, value)]
    # EVAL with the text, not a registered script: in a pipeline, redis-py checks
    # registered scripts with an extra SCRIPT EXISTS round trip on every execute, while
    # Redis caches the compiled script by its text's hash anyway.
    commands.execute_command(
        "EVAL", UPDATE_IF_PRESENT, 1, keys.event(meta.source, meta.event_id), *args
    )
    if outcome is not None:
        commands.execute_command("HINCRBY", keys.stats(meta.source), str(outcome), 1)
        count_by_type(commands, keys, meta.source, meta.type, outcome)


def count_by_type(
    commands: Commands, keys: Keys, source: str, event_type: str, outcome: Outcome, count: int = 1
) -> None:
    """Queue the count of outcomes by event type (`app/type_stats.py`)."""
    commands.execute_command(*count_command(keys, source, event_type, str(outcome), count))


def begin_attempt(commands: Commands, job: Job, meta: JobMeta, requeued: bool) -> None:
    """An attempt starts: its meta (attempts counted), its budget, the ledger."""
    job.meta = meta.to_meta()
    fields: list[Any] = ["meta", job.serializer.dumps(job.meta)]
    if job.retries_left is not None:  # RQ stores no field for a job without retries
        fields += ["retries_left", job.retries_left]
    if job.retry_intervals is not None:
        fields += [
            "retry_intervals",
            "[" + ",".join(str(int(v)) for v in job.retry_intervals) + "]",
        ]
    commands.execute_command("HSET", job.key, *fields)
    record(commands, job, meta, EventStatus.RUNNING, Outcome.REQUEUED if requeued else None)


def conclude(meta: JobMeta, status: EventStatus, error: str = "") -> None:
    """An attempt's end, in the meta (in memory; the caller saves it)."""
    meta.state = status
    if error:
        meta.last_error = error
    if status is EventStatus.DEAD:
        meta.dead_at = time.time()
    elif status.settled:
        meta.settled_at = time.time()


def record_end(
    commands: Commands,
    job: Job,
    meta: JobMeta,
    outcome: Outcome | None,
    payload: bytes | None = None,
    error: str = "",
) -> None:
    """The ledger's side of an attempt's end: the event's state, the attempt with each
    handler's turn (`app/turns.py`), where each handler stands; a settled event's payload."""
    fields: dict[str, Any] = {"last_error": meta.last_error} if meta.last_error else {}
    if payload is not None and meta.state.settled:
        fields["payload"] = payload
    turns = meta.turns
    fields[run_field(meta.attempts)] = attempt_json(
        meta.attempts, time.time(), str(meta.state), error, turns
    )
    # Left out when this attempt's turns say it all (each handler succeeded on it): the
    # ledger reads it from them. Written empty over what an earlier attempt may have left.
    if meta.handlers and not told_by_turns(meta.handlers, turns):
        fields["handlers"] = encode_json(meta.handlers)
    elif meta.attempts > 1:
        fields["handlers"] = ""
    record(commands, job, meta, meta.state, outcome, **fields)


def settle(
    commands: Commands,
    job: Job,
    meta: JobMeta,
    status: EventStatus,
    outcome: Outcome,
    error: str = "",
    payload: bytes | None = None,
) -> None:
    """The meta and ledger writes of a settled attempt (done, retrying or dead)."""
    conclude(meta, status, error)
    save_meta(commands, job, meta)
    record_end(commands, job, meta, outcome, payload, error)


def log_outcome(
    job: Job,
    meta: JobMeta,
    status: EventStatus,
    error: str = "",
    delay: int | None = None,
    retries_left: int | None = None,
) -> None:
    """The one JSON line of a terminal state (or of a scheduled retry), naming how each
    handler's turn at the attempt ended."""
    fields: dict[str, Any] = {"job_id": job.id, "attempt": meta.attempts}
    if meta.turns:
        fields["handlers"] = {turn[0]: turn[1] for turn in meta.turns}
    if status is EventStatus.RETRYING:
        left = job.retries_left if retries_left is None else retries_left
        log_state(
            "retry_scheduled", *meta.labels, delay=delay, retries_left=left, error=error, **fields
        )
    elif status is EventStatus.DEAD:
        log_state("dead_lettered", *meta.labels, permanent=meta.permanent, error=error, **fields)
    else:
        log_state(str(status), *meta.labels, **fields)
