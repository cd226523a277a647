"""The RQ job of one event, typed: its call arguments, its meta, and the ledger's statuses.

The receiver writes all three in its claim script; the worker reads them back and updates
the meta and the status as attempts go; the `webhooks` command and the dashboard read them.
RQ stores `job.meta` as a pickled dict and the arguments as a positional tuple: these
classes are the one place that names their fields, so a typo is an error, not a silent
miss.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import Any

from app.turns import HandlerState, Turn, states_of, turns_of


class UnreadableJob(ValueError):
    """A job that is not an event's: enqueued on our queue by something else, or written
    damaged. The worker sends it to the failed registry instead of running it."""


class EventStatus(StrEnum):
    """Where an event stands, in the ledger and in its job's meta (`state`)."""

    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    DONE = "done"
    IGNORED = "ignored"
    STALE = "stale"
    DEAD = "dead"

    @property
    def settled(self) -> bool:
        return self in SETTLED


class PayloadFormat(StrEnum):
    """How the worker parses an event's verified bytes into `Event.payload`."""

    JSON = "json"  # an object or, for batching providers, an array
    FORM = "form"  # application/x-www-form-urlencoded, as Twilio and Braintree post


class Outcome(StrEnum):
    """What the workers did, counted per source in Redis (`webhooks_worker_outcomes_total`)."""

    DONE = "done"
    IGNORED = "ignored"
    STALE = "stale"
    RETRIED = "retried"
    DEAD_LETTERED = "dead_lettered"
    REQUEUED = "requeued"


# The ends of a handler that returned, and all the settled states.
SUCCESS = frozenset({EventStatus.DONE, EventStatus.IGNORED, EventStatus.STALE})
SETTLED = SUCCESS | {EventStatus.DEAD}
PENDING = frozenset({EventStatus.QUEUED, EventStatus.RUNNING, EventStatus.RETRYING})


@dataclass(frozen=True, slots=True)
class EventCall:
    """The job function's arguments: what the handler's `Event` is built from."""

    source: str
    event_id: str
    type: str
    raw: bytes
    headers: dict[str, str]
    received_at: float

    def args(self) -> tuple[str, str, str, bytes, dict[str, str], float]:
        return (self.source, self.event_id, self.type, self.raw, self.headers, self.received_at)

    @classmethod
    def from_args(cls, args: tuple[Any, ...] | list[Any]) -> EventCall:
        try:
            source, event_id, event_type, raw, headers, received_at = args
            return cls(
                str(source),
                str(event_id),
                str(event_type),
                bytes(raw),
                dict(headers),
                float(received_at),
            )
        except (TypeError, ValueError):
            raise UnreadableJob("its arguments are not an event's") from None


@dataclass(slots=True)
class JobMeta:
    """`job.meta` of an event's job: where rq-dashboard shows it, and the retry budget.

    The budget: `attempts` counts every start across requeues, `budget` is the retries
    granted and `budget_start` the attempts made before the current budget. While a budget
    runs, `attempts - budget_start + retries_left == budget`; a job that comes back from the
    failed registry breaks that equation, which is how a requeue made by anything else than
    our command (rq-dashboard, `rq requeue`) is noticed.
    """

    source: str
    event_id: str
    type: str
    received_at: float
    # Where the worker records outcomes (ledger, counters, entity versions).
    prefix: str
    ledger_ttl: int
    payload_format: PayloadFormat = PayloadFormat.JSON
    # Log-only dedupe mode: this job is a would-be duplicate, enqueued anyway.
    duplicate: bool = False
    attempts: int = 0
    budget: int = 0
    budget_start: int = 0
    requeues: int = 0
    state: EventStatus = EventStatus.QUEUED
    last_error: str = ""
    permanent: bool = False
    dead_at: float | None = None
    settled_at: float | None = None
    # Where each handler stands (name -> `HandlerState`), and this attempt's turns
    # ([name, state, error] each): `app/turns.py`. Plain types: any version unpickles them.
    handlers: dict[str, str] = field(default_factory=dict)
    turns: list[list[str]] = field(default_factory=list)
    # Tracing (`app/tracing.py`): the W3C traceparent every attempt's span is a child of,
    # and, after a requeue or a replay, the trace the next attempt's new one links to.
    trace: str = ""
    trace_link: str = ""
    # Keys a newer version wrote that this one does not know: kept, not dropped.
    extra: dict[str, Any] = field(default_factory=dict)

    def to_meta(self) -> dict[str, Any]:
        """The fields that differ from their defaults (every queued job's meta is pickled
        into its hash: a fifth of an event's bytes in Redis), and always the state."""
        meta = dict(self.extra)
        for name, default in _META_DEFAULTS:
            value = getattr(self, name)
            if value is not None and value != default:
                # Enums as plain strings: pickles readable by any version.
                meta[name] = str(value) if isinstance(value, StrEnum) else value
        meta["state"] = str(self.state)
        return meta

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> JobMeta:
        if not isinstance(meta, dict) or not _REQUIRED.issubset(meta):
            raise UnreadableJob("its meta is not an event's")
        known = set(_META_FIELDS)
        values = {k: v for k, v in meta.items() if k in known}
        try:
            values["state"] = EventStatus(str(values.get("state")))
        except ValueError:
            # Jobs written before the state existed: dead letters carried `dead: True`.
            values["state"] = EventStatus.DEAD if meta.get("dead") else EventStatus.QUEUED
        if "format" in meta and "payload_format" not in values:
            values["payload_format"] = meta["format"]
        try:
            values["payload_format"] = PayloadFormat(values.get("payload_format", "json"))
        except ValueError:
            raise UnreadableJob("its meta names an unknown payload format") from None
        extra = {k: v for k, v in meta.items() if k not in known and k not in ("dead", "format")}
        return cls(**values, extra=extra)

    @property
    def handler_states(self) -> dict[str, HandlerState]:
        return states_of(self.handlers)

    @property
    def attempt_turns(self) -> tuple[Turn, ...]:
        return turns_of(self.turns)

    def forget_failures(self, all_handlers: bool = False) -> None:
        """A requeue: the handlers that have not succeeded run again (every one, with
        `all_handlers`); those that did keep their success."""
        states = {} if all_handlers else self.handler_states
        self.handlers = {name: str(s) for name, s in states.items() if s.succeeded}

    @property
    def labels(self) -> tuple[str, str, str]:
        """Source, event id and type, as every log line names them."""
        return self.source, self.event_id, self.type

    def budget_spent_elsewhere(self, retries_left: int) -> bool:
        """True when the job was requeued by something that did not restore its budget."""
        if self.state is EventStatus.DEAD:
            return True
        return self.attempts - self.budget_start + retries_left > self.budget


_META_FIELDS = tuple(f.name for f in fields(JobMeta) if f.name != "extra")


def _default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else None


_REQUIRED = frozenset(
    f.name
    for f in fields(JobMeta)
    if f.default is MISSING and f.default_factory is MISSING and f.name != "extra"
)
_META_DEFAULTS = tuple((f.name, _default(f)) for f in fields(JobMeta) if f.name != "extra")
