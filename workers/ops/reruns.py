"""Where an operator ran an event again: a requeue or a replay, and between which attempts.

An event's attempts are numbered across requeues and replays (`JobMeta.attempts`), and
its ledger record keeps each attempt (`run:<n>`, `app/turns.py`). What ran it again is an
operator's act, written into the record beside the attempts as one `rerun:<n>` field:
after attempt n, when, how (requeue or replay), by what (the Events page, the command,
rq-dashboard) and for which handlers. The commands that write it: `DeadLetters.requeue`
(the Events page's requeue and bulk requeue, `webhooks dead requeue`, rq-dashboard's
requeue buttons, which the dashboard answers with it) and `LedgerReplay` (replay, from the
page or the command).

A requeue made elsewhere (`rq requeue`, an older version) writes none: the event's page
still sees it in the attempts themselves, an attempt that settled followed by another, and
marks it without saying who (`workers/ops/events_page/attempts.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from app.turns import KEPT_ATTEMPTS

RERUN_FIELD = "rerun:"


class How(StrEnum):
    REQUEUE = "requeue"  # a dead letter, back on the queue with its full budget
    REPLAY = "replay"  # a stored event run again (a dead letter's replay is its requeue)


@dataclass(frozen=True, slots=True)
class Rerun:
    after: int  # the attempts made before it: it happened between `after` and `after + 1`
    at: float
    how: How
    by: str  # "dashboard", "command", "rq-dashboard"
    all_handlers: bool = False

    def field(self) -> str:
        """Its field of the ledger record: one per gap between attempts, bounded as the
        attempts are (rerun n overwrites n - KEPT_ATTEMPTS)."""
        return f"{RERUN_FIELD}{self.after % KEPT_ATTEMPTS}"

    def written(self) -> dict[str, str]:
        """Its field and value, as the ledger record takes them."""
        return {self.field(): self.to_json()}

    def to_json(self) -> str:
        return json.dumps(
            {
                "after": self.after,
                "at": round(self.at, 3),
                "how": str(self.how),
                "by": self.by,
                "all": self.all_handlers,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: bytes | str) -> Rerun | None:
        try:
            value = json.loads(raw)
            return cls(
                int(value["after"]),
                float(value["at"]),
                How(value["how"]),
                str(value["by"]),
                bool(value.get("all", False)),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def reruns_of(fields: dict[str, bytes]) -> tuple[Rerun, ...]:
    """The reruns a ledger record keeps, oldest first."""
    found = (Rerun.from_json(v) for k, v in fields.items() if k.startswith(RERUN_FIELD))
    return tuple(sorted((r for r in found if r is not None), key=lambda r: (r.after, r.at)))
