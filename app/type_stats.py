"""The workers' outcomes by event type, with the number of types a source may add bounded.

Event types are the provider's text: Stripe has some 250, a `recipe` or `hmac` source
whatever its sender writes. Each type is a metric series per outcome
(`webhooks_worker_type_outcomes_total{source,type,outcome}`), so a source's first
TYPES_PER_SOURCE types are counted under their own names and any later one under `(other)`.
The types once counted stay in a set, so a type never moves from its own series to
`(other)` or back; a type longer than TYPE_LENGTH is cut, one without a type is `(none)`.
The count rides in the pipeline or transaction of the outcome it counts: no round trip.
"""

from __future__ import annotations

from typing import Any

from app.keys import Keys

TYPES_PER_SOURCE = 50
TYPE_LENGTH = 100
OTHER = "(other)"
NO_TYPE = "(none)"

# KEYS: the source's set of types counted apart, its hash of counts.
# ARGV: the type, the outcome, TYPES_PER_SOURCE, OTHER, how many.
COUNT = """
local kind = ARGV[1]
if redis.call('SISMEMBER', KEYS[1], kind) == 0 then
  if redis.call('SCARD', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('SADD', KEYS[1], kind)
  else
    kind = ARGV[4]
  end
end
redis.call('HINCRBY', KEYS[2], ARGV[2] .. ':' .. kind, ARGV[5])
return 0
"""


def type_label(event_type: str) -> str:
    return event_type[:TYPE_LENGTH] if event_type else NO_TYPE


def count_command(
    keys: Keys, source: str, event_type: str, outcome: str, count: int = 1
) -> tuple[Any, ...]:
    """The EVAL that counts `count` outcomes of one event type (its text, not a registered
    script: in a pipeline redis-py would check a registered one with a round trip)."""
    return (
        "EVAL",
        COUNT,
        2,
        keys.types(source),
        keys.type_stats(source),
        type_label(event_type),
        outcome,
        TYPES_PER_SOURCE,
        OTHER,
        count,
    )


def read_counts(fields: dict[str, int]) -> dict[tuple[str, str], int]:
    """`{"done:invoice.paid": 3}` -> `{("invoice.paid", "done"): 3}` (outcomes hold no colon)."""
    counts: dict[tuple[str, str], int] = {}
    for field, count in fields.items():
        outcome, _, kind = field.partition(":")
        counts[kind, outcome] = count
    return counts
