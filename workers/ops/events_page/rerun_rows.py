"""The marks among an event's attempts where an operator ran it again: requeued, replayed.

The record says so itself for the requeues and replays made by the Events page, the
`webhooks` command and rq-dashboard's buttons (`workers/ops/reruns.py`): when, from where,
for which handlers. Any other (`rq requeue`, or one made before records kept them) shows in
the attempts alone: an attempt after which the event had settled (dead, or done) and yet
another attempt came, or the event is pending again. Those are marked too, saying that
who and when are not known, rather than left for the reader to notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from app.formats import iso
from app.jobstate import PENDING, SETTLED
from app.turns import AttemptRecord
from workers.ops.ledger import LedgerRecord
from workers.ops.reruns import How, Rerun

WHERE = {
    "dashboard": "from the Events page",
    "command": "by the webhooks command",
    "rq-dashboard": "from rq-dashboard",
}
DONE = {How.REQUEUE: "Requeued", How.REPLAY: "Replayed"}


@dataclass(frozen=True, slots=True)
class RerunRow:
    """A row of the attempts table between two attempts (or after the last): what ran the
    event again. Fixed words, and the time; nothing a sender wrote."""

    after: int
    text: str
    recorded: bool  # False: seen in the attempts only, who and when unknown
    marker: ClassVar[bool] = True

    @classmethod
    def of(cls, rerun: Rerun) -> RerunRow:
        where = WHERE.get(rerun.by, f"by {rerun.by}")
        handlers = "every handler" if rerun.all_handlers else "the handlers that had not succeeded"
        text = f"{DONE[rerun.how]} {where} at {iso(rerun.at)}: {handlers} run again."
        return cls(rerun.after, text, True)

    @classmethod
    def seen(cls, attempt: AttemptRecord) -> RerunRow:
        done = "Requeued" if attempt.status == "dead" else "Replayed"
        text = f"{done} after this attempt (not recorded by whom, nor when)."
        return cls(attempt.number, text, False)


def rerun_after(
    record: LedgerRecord, attempt: AttemptRecord, following: AttemptRecord | None
) -> RerunRow | None:
    """The mark after `attempt` (`following` is the next attempt kept, None after the
    last), or None when nothing ran the event again there."""
    recorded = [r for r in record.reruns if r.after == attempt.number]
    if recorded:
        return RerunRow.of(recorded[-1])
    settled = attempt.status in {str(s) for s in SETTLED}
    if settled and (following is not None or record.status in PENDING):
        return RerunRow.seen(attempt)
    return None
