"""Settling a batch in one transaction, its answer read now or after the next batch runs.

What the settlement writes is `settlement_writes.py`'s, queued on one program (one
command: `program.py`). The transaction is sent on a connection of its own: `settle_batch`
reads its answer at once; the worker in simple mode sends it (`send`) before it runs the
next batch and reads the answer (`finish`) after, so Redis applies it while the handlers
run instead of the worker waiting for it.

A job is settled once, whoever settles it. The worker that ran it and another worker's
recovery may both try (the runner's heartbeats were late, or its settle was slow): the
transaction watches the jobs' hashes, which every settlement writes, and settles only the
jobs whose execution is still in the started registry, which every settlement leaves. The
second one to commit finds its jobs changed, looks again, and leaves them. The same holds
for a settlement made late, after a cut of the worker's link to Redis: a job that another
worker's recovery took back meanwhile is left to it. When the answer is lost (the link
went after the transaction was sent), the transaction may still have been applied: what it
would have logged is kept on the batch, and the next try logs it for each job it finds
settled whose meta is the one that try wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.connection import Connection, ConnectionPool
from redis.exceptions import RedisError, ResponseError
from rq.job import Job

from app.logs import logger
from workers.runtime.batch import Batch, Entry
from workers.runtime.outcomes import log_outcome
from workers.runtime.program import Program
from workers.runtime.rq_worker import RQWorker
from workers.runtime.settlement_writes import JobState, Logged, queue_settlement

# Each attempt after the first follows a settlement by someone else; more than a few in a
# row would mean something rewrites job hashes in a loop.
ATTEMPTS = 5


class OutOfTurn(Exception):
    """A reply that does not answer the command sent: the connection is out of step."""


@dataclass(slots=True)
class Sent:
    """A settlement sent, its answer not read yet: its connection is its own until then."""

    worker: RQWorker
    batch: Batch
    pool: ConnectionPool
    connection: Connection
    states: list[JobState]
    held: list[Entry]
    logged: list[Logged]
    replies: int  # MULTI's, the program's and EXEC's; or UNWATCH's


def settle_batch(worker: RQWorker, batch: Batch) -> list[Entry]:
    """Settle the batch's jobs that nobody else has; returns those it settled."""
    for _ in range(ATTEMPTS):
        try:
            sent = send(worker, batch)
        except OutOfTurn:
            continue
        held = finish(sent)
        if held is not None:
            return held
    raise RuntimeError(f"settling a batch of {len(batch.entries)}: its jobs kept changing")


def send(worker: RQWorker, batch: Batch) -> Sent:
    """Watch the jobs, find those still held, send their settlement: one round trip, and
    the transaction sent without waiting for its answer."""
    # Every entry has begun (the worker settles only a batch it began; recovery, executions
    # from the started registry), and neither settles an empty batch.
    entries = batch.entries
    states = [JobState.of(e.job) for e in entries]
    pool = worker.connection.connection_pool
    connection: Connection = pool.get_connection()
    try:
        members = [e.execution.composite_key for e in entries]  # type: ignore[union-attr]
        watch = ("WATCH", *[e.job.key for e in entries])
        both = [watch, ("ZMSCORE", batch.started.key, *members)]
        connection.send_packed_command(connection.pack_commands(both))  # type: ignore[no-untyped-call]
        watched, scores = connection.read_response(), connection.read_response()
        held = still_held(batch, entries, watched, scores)
        program = Program()
        logged = queue_settlement(program, worker, batch, held)
        # Nothing to write (others settled every job): the watch is let go instead.
        commands = [("MULTI",), program.as_eval(), ("EXEC",)] if program.count else [("UNWATCH",)]
        connection.send_packed_command(connection.pack_commands(commands))  # type: ignore[no-untyped-call]
    except BaseException as exc:
        # Never reused: it may hold replies not read, or a WATCH.
        _drop(pool, connection, entries, states)
        if isinstance(exc, OutOfTurn):
            # Seen once after a cut link (a connection reset mid-reply): WATCH read a reply
            # left on the connection, ZMSCORE read WATCH's.
            logger.warning("redis answered out of turn: settling again on a new connection")
        # A link error: the worker tries again once Redis answers, from the jobs as they
        # ended, not as this attempt left them (a retry's budget taken once, not twice).
        raise
    return Sent(worker, batch, pool, connection, states, held, logged, len(commands))


def finish(sent: Sent) -> list[Entry] | None:
    """Read the settlement's answer: the entries it settled, or None when a job it watched
    changed meanwhile (nothing was written: the caller tries again)."""
    entries, connection = sent.batch.entries, sent.connection
    try:
        for _ in range(sent.replies - 1):
            connection.read_response()  # MULTI's OK, the program's QUEUED
        answer: Any = connection.read_response()  # EXEC's, or UNWATCH's OK
    except BaseException:
        _drop(sent.pool, connection, entries, sent.states)
        # Redis may have applied it: the try that finds these jobs settled asks (`_log`).
        for line in sent.logged:
            sent.batch.unanswered.setdefault(line.job.id, []).append(line)
        raise
    sent.pool.release(connection)
    if answer is None:
        for entry, state in zip(entries, sent.states, strict=True):
            state.restore(entry.job)
        return None
    if isinstance(answer, list):
        failed = [reply for reply in answer if isinstance(reply, ResponseError)]
        if failed:
            raise failed[0]
    _log(sent)
    return sent.held


def _log(sent: Sent) -> None:
    """The settlement's outcome lines; and for each job it found settled, the line of an
    earlier try whose answer was lost and which settled it, or else a warning."""
    for line in sent.logged:
        _log_line(line)
    settled = {id(entry) for entry in sent.held}
    others = [entry for entry in sent.batch.entries if id(entry) not in settled]
    for entry in others:
        sent.worker.executions.pop(entry.execution.id, None)  # type: ignore[union-attr]
    applied = _applied_unanswered(sent.worker, sent.batch, others)
    for entry in others:
        earlier = applied.get(entry.job.id) if applied is not None else None
        if earlier is not None:
            _log_line(earlier)
        elif applied is None and entry.job.id in sent.batch.unanswered:
            logger.warning(
                "job settled already (by this worker's try whose answer was lost, or by "
                "another worker); not settled again",
                extra={"job_id": entry.job.id},
            )
        else:
            logger.warning(
                "job settled by another worker; not settled again", extra={"job_id": entry.job.id}
            )


def _log_line(line: Logged) -> None:
    if line.meta is None:
        logger.error(
            "a job that is not a webhook event's was moved to the failed registry",
            extra={"job_id": line.job.id, "error": line.error},
        )
    else:
        log_outcome(line.job, line.meta, line.status, line.error, line.delay, line.retries_left)


def _applied_unanswered(
    worker: RQWorker, batch: Batch, others: list[Entry]
) -> dict[str, Logged] | None:
    """Of the jobs found settled, those an earlier try whose answer was lost settled: the
    job's meta is the one it wrote. By job id, what that try would have logged; None when
    Redis could not be asked (the settlement is done: this only decides a log line)."""
    asked = [entry.job for entry in others if entry.job.id in batch.unanswered]
    if not asked:
        return {}
    stored = worker.connection.pipeline(transaction=False)
    for job in asked:
        stored.hmget(job.key, ["meta", "status"])
    try:
        replies = stored.execute()
    except RedisError:
        return None
    applied: dict[str, Logged] = {}
    for job, (meta, status) in zip(asked, replies, strict=True):
        for line in batch.unanswered[job.id]:
            if line.meta is None:
                # Not an event's job: no meta of ours; that try failed it, as RQ's sweep would.
                mine = status == b"failed"
            else:
                mine = meta is not None and line.written_by_this(_loaded(job, meta))
            if mine:
                applied[job.id] = line
                break
    return applied


def _loaded(job: Job, meta: bytes) -> dict[str, Any] | None:
    try:
        loaded = job.serializer.loads(meta)
    except Exception:  # whatever wrote it, it was not this settlement
        return None
    return loaded if isinstance(loaded, dict) else None


def still_held(batch: Batch, entries: list[Entry], watched: Any, scores: Any) -> list[Entry]:
    """The entries whose execution is still in the started registry: nobody settled them.
    `watched` is WATCH's reply, `scores` ZMSCORE's."""
    if watched != b"OK" or not isinstance(scores, list) or len(scores) != len(entries):
        raise OutOfTurn(f"WATCH answered {type(watched).__name__}, ZMSCORE {type(scores).__name__}")
    return [entry for entry, score in zip(entries, scores, strict=True) if score is not None]


def _drop(
    pool: ConnectionPool,
    connection: Connection,
    entries: list[Entry],
    states: list[JobState],
) -> None:
    connection.disconnect()  # type: ignore[no-untyped-call]
    pool.release(connection)
    for entry, state in zip(entries, states, strict=True):
        state.restore(entry.job)
