"""An event's attempts as its page lists them, and where each of its handlers stands.

The ledger record keeps the last KEPT_ATTEMPTS attempts, each with every handler's turn
(`app/turns.py`): the page lists a row per turn, or one row for an attempt with no turn
(an ignored event, a worker that died before any handler finished, nothing left to run),
and says how many earlier attempts it cannot list. Between attempts, a row marks where a
requeue or a replay ran the event again (`rerun_rows.py`). A record written before the worker
kept turns has none: the page lists what RQ still keeps of the job's results instead,
and says how many of the record's attempts that is (RQ trims them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rq.job import Job
from rq.results import Result

from app.formats import iso
from app.turns import KEPT_ATTEMPTS
from workers.ops.events_page.rerun_rows import RerunRow, rerun_after
from workers.ops.ledger import LedgerRecord
from workers.runtime.outcomes import last_error


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One handler's turn at one attempt; for an attempt with no turn, the attempt itself
    (no handler, and the event's status after it in place of a handler's state)."""

    attempt: int
    ended: str
    handler: str
    state: str
    error: str
    marker: ClassVar[bool] = False  # not a `RerunRow`


@dataclass(frozen=True, slots=True)
class RqAttempt:
    """One attempt as RQ recorded it: the fallback for records without turns."""

    when: str
    outcome: str
    error: str


def turn_rows(record: LedgerRecord) -> tuple[TurnRow | RerunRow, ...]:
    """Every turn of every attempt the record keeps, oldest attempt first, and after an
    attempt, a mark where a requeue or a replay ran the event again (`rerun_rows.py`)."""
    rows: list[TurnRow | RerunRow] = []
    kept = record.attempt_log
    for index, attempt in enumerate(kept):
        ended = iso(attempt.ended_at) or "-"
        if not attempt.turns:
            rows.append(TurnRow(attempt.number, ended, "-", attempt.status, attempt.error))
        rows += [
            TurnRow(attempt.number, ended, turn.handler, str(turn.state), turn.error)
            for turn in attempt.turns
        ]
        mark = rerun_after(record, attempt, kept[index + 1] if index + 1 < len(kept) else None)
        if mark is not None:
            rows.append(mark)
    return tuple(rows)


def earlier_note(record: LedgerRecord) -> str | None:
    """Which attempts before the oldest kept one the page cannot list, and why; None when
    it lists them all."""
    earlier = record.attempts_left_out
    if not record.attempt_log or earlier <= 0:
        return None
    attempts = "attempt is" if earlier == 1 else "attempts are"
    if len(record.attempt_log) >= KEPT_ATTEMPTS:
        return f"{earlier} earlier {attempts} not kept: a record keeps the last {KEPT_ATTEMPTS}."
    # Fewer than the cap kept, and yet some missing: they ended before the worker kept
    # each attempt (a record from before the upgrade).
    return (
        f"{earlier} earlier {attempts} not detailed: they ended before the record kept each "
        "attempt."
    )


def rq_attempts(job: Job) -> tuple[tuple[RqAttempt, ...], str | None]:
    """What RQ keeps of the job's attempts (newest first), and the last traceback."""
    results = Result.all(job)
    attempts = tuple(
        RqAttempt(
            when=iso(result.created_at.timestamp()) or "-",
            outcome=Result.Type(result.type).name.lower().replace("_", " "),
            error=last_error(result.exc_string) if result.exc_string else "",
        )
        for result in results
    )
    traceback = next((r.exc_string for r in results if r.exc_string), None)
    return attempts, traceback


def rq_note(record: LedgerRecord, listed: int) -> str:
    """How many of the record's attempts RQ's results list, for a record without turns."""
    attempts = f"{record.attempts} attempt{'' if record.attempts == 1 else 's'}"
    return (
        f"RQ keeps {listed} of this event's {attempts}, shown newest first: this record was "
        "written before each handler's turn was kept."
    )
