"""A dead letter as the commands list it, and which of them a bulk command selects: plain
data, without rq, so that a command over a cluster's shards can read what each shard's
process sends back (`shard_fanout.py`: rq is imported there, under the shard's prefix)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from app.turns import FAILURES, HandlerState


@dataclass(frozen=True, slots=True)
class DeadLetter:
    job_id: str
    source: str
    event_id: str
    type: str
    attempts: int
    error: str
    failed_at: str | None
    failed_ts: float | None = None
    # Where each handler stands for the event (its job's meta); listed as the names of
    # those that have not succeeded.
    handlers: dict[str, HandlerState] = field(default_factory=dict)

    @property
    def failed_handlers(self) -> list[str]:
        return [name for name, state in self.handlers.items() if state in FAILURES]

    def kept_handlers(self, all_handlers: bool) -> list[str]:
        """The handlers a requeue does not run again: those that succeeded, unless all."""
        return [] if all_handlers else [n for n, s in self.handlers.items() if s.succeeded]

    def rerun_handlers(self, all_handlers: bool) -> list[str]:
        """The handlers it knows of that a requeue runs again (any matching handler that
        never finished a turn runs too); not one no longer registered at the last attempt."""
        kept = self.kept_handlers(all_handlers)
        return [
            name
            for name, state in self.handlers.items()
            if name not in kept and state is not HandlerState.REMOVED
        ]

    def as_dict(self) -> dict[str, Any]:
        row = asdict(self)
        del row["failed_ts"], row["handlers"]
        row["failed_handlers"] = self.failed_handlers
        return row


@dataclass(frozen=True, slots=True)
class Selection:
    """Which dead letters a bulk command acts on; empty fields match everything."""

    source: str | None = None
    type: str | None = None
    error: str | None = None
    since: float | None = None
    until: float | None = None

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.source, self.type, self.error, self.since, self.until))

    def matches(self, letter: DeadLetter) -> bool:
        when = letter.failed_ts
        return (
            (self.source is None or letter.source == self.source)
            and (self.type is None or letter.type == self.type)
            and (self.error is None or self.error.lower() in letter.error.lower())
            and (self.since is None or (when is not None and when >= self.since))
            and (self.until is None or (when is not None and when <= self.until))
        )


def groups(letters: list[DeadLetter]) -> list[dict[str, Any]]:
    """Dead letters by error, most frequent first: 400 letters read as a few causes."""
    by_error: dict[str, list[DeadLetter]] = {}
    for letter in letters:
        by_error.setdefault(letter.error, []).append(letter)
    return [
        {
            "error": error,
            "count": len(same),
            "sources": sorted({x.source for x in same}),
            "types": sorted({x.type for x in same}),
            "first_failed_at": min((x.failed_at or "" for x in same), default=""),
            "last_failed_at": max((x.failed_at or "" for x in same), default=""),
            "example_job_id": same[0].job_id,
        }
        for error, same in sorted(by_error.items(), key=lambda kv: -len(kv[1]))
    ]
