"""What this receiver process answered, per source, as prometheus-client counts it, less
what its timeline flush (`app/timeline.py`) already wrote: the receipts the Events page's
chart draws."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.last_accepted import AcceptedMarks
from app.metrics import RECEIVED, REJECTED


@dataclass
class ReceiverCounts:
    """This process's answers, as counted by prometheus-client, less what was flushed."""

    sources: frozenset[str]
    flushed: dict[tuple[str, str], float] = field(default_factory=dict)
    # Sources whose workers' counters did not exist when this process started: when they
    # appear, everything in them is new. Counters that predate it are only noted.
    fresh: set[str] = field(default_factory=set)
    # When each source last had an event accepted: written with the counts, read at start
    # (`last_accepted.py`); under the prefix set by `note_fresh`.
    marks: AcceptedMarks | None = None

    def __post_init__(self) -> None:
        self.flushed = self.totals()  # what happened before this app started is not its own

    def totals(self) -> dict[tuple[str, str], float]:
        totals: dict[tuple[str, str], float] = {}
        for metric, field_of in ((RECEIVED, "outcome"), (REJECTED, None)):
            for family in metric.collect():
                for sample in family.samples:
                    source = sample.labels.get("source", "")
                    if not sample.name.endswith("_total") or source not in self.sources:
                        continue
                    # RECEIVED's outcomes, accepted and duplicate, are fields as they are.
                    key = (source, sample.labels[field_of] if field_of else "rejected")
                    totals[key] = totals.get(key, 0.0) + sample.value
        return totals

    def pending(self) -> dict[tuple[str, str], int]:
        totals = self.totals()
        grown = {key: int(value - self.flushed.get(key, 0.0)) for key, value in totals.items()}
        return {key: count for key, count in grown.items() if count > 0}

    def commit(self, flushed: dict[tuple[str, str], int]) -> None:
        for key, count in flushed.items():
            self.flushed[key] = self.flushed.get(key, 0.0) + count
