"""When each source last had an event accepted, kept in Redis so that it outlives a restart.

`webhooks_last_accepted_timestamp_seconds` is a gauge of each receiver process, set on the
request path. A restarted process would serve 0 until its source's next delivery, and the
silence alert (deploy/prometheus/webhook-alerts.yml), which ignores 0, would be blind to a
source that fell silent across a deploy. So, off the request path, the timeline's flush
(`timeline.py`, every few seconds) writes each source's time when this process's gauge grew,
keeping the latest of all the processes' (a script); and a starting receiver sets its gauges
from what is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.metrics import LAST_ACCEPTED

# KEYS: the hash of times. ARGV: pairs (source, time); a time is kept only when later.
KEEP_LATEST = """
for i = 1, #ARGV, 2 do
  local kept = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if tonumber(ARGV[i + 1]) > kept then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 0
"""


def gauge_values(sources: frozenset[str]) -> dict[str, float]:
    """This process's gauge, per configured source."""
    found: dict[str, float] = {}
    for family in LAST_ACCEPTED.collect():
        for sample in family.samples:
            source = sample.labels.get("source", "")
            if source in sources:
                found[source] = max(found.get(source, 0.0), sample.value)
    return found


@dataclass
class AcceptedMarks:
    key: str
    sources: frozenset[str]
    # What was written (or there when the process started: not this app's to write).
    written: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.written = gauge_values(self.sources)

    def restore(self, stored: dict[Any, Any]) -> None:
        """Set the gauges from the times Redis keeps, where later than this process's."""
        for raw_source, raw_time in stored.items():
            source = raw_source.decode() if isinstance(raw_source, bytes) else str(raw_source)
            if source not in self.sources:
                continue
            kept = float(raw_time)
            if kept > gauge_values(frozenset([source])).get(source, 0.0):
                LAST_ACCEPTED.labels(source).set(kept)
            self.written[source] = max(self.written.get(source, 0.0), kept)

    def pending(self) -> dict[str, float]:
        current = gauge_values(self.sources)
        return {s: t for s, t in current.items() if t > self.written.get(s, 0.0)}

    def add_to(self, pipe: Any, pending: dict[str, float]) -> None:
        if pending:
            pairs = [item for source, when in pending.items() for item in (source, repr(when))]
            pipe.eval(KEEP_LATEST, 1, self.key, *pairs)

    def commit(self, pending: dict[str, float]) -> None:
        self.written.update(pending)
