"""Each handler's turn at an event: how it ended in each attempt, and where it stands.

An event's handlers retry one by one: a handler that has succeeded never runs again for
that event (not on a retry, a requeue or a replay, unless told `--all-handlers`), while a
failing one runs on every attempt until it succeeds or the event dies. The worker keeps
two things, typed here and stored as plain lists and dicts (pickled in the job's meta, as
JSON in the ledger record) so any version can read them:
- where each handler stands (`JobMeta.handlers`: name -> state), read at each attempt to
  know which handlers are still to run;
- each attempt's turns (`JobMeta.turns`, then one `run:<n>` field of the ledger record per
  attempt, the last KEPT_ATTEMPTS of them), which the commands and the Events page show.

A handler is named by its module and qualified name (`myapp.webhooks.sync_order`): the
name that survives a deploy, so the handler deployed next finds its own state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# Attempts whose turns a ledger record keeps; an event retried or requeued past this keeps
# its latest, and the page says how many earlier ones it leaves out.
KEPT_ATTEMPTS = 50
# A turn's error, as kept: the exception and its message, cut (each kept attempt of each
# handler holds one, for WEBHOOK_LEDGER_TTL).
ERROR_LIMIT = 200
RUN_FIELD = "run:"


class HandlerState(StrEnum):
    """How one handler's turn ended, and where the handler stands for the event."""

    DONE = "done"  # it returned
    STALE = "stale"  # its version guard found this version, or a newer one, applied
    FAILED = "failed"  # it raised: it runs again on the event's next attempt
    PERMANENT = "permanent"  # it raised PermanentError: it runs again only on a requeue
    REMOVED = "removed"  # it had not succeeded, and was no longer registered: skipped
    # In an outcome of the pytest plugin only: a matching handler that did not run on this
    # attempt (it succeeded on an earlier one; or a timeout ended the attempt first).
    NOT_RUN = "not_run"

    @property
    def succeeded(self) -> bool:
        return self in (HandlerState.DONE, HandlerState.STALE)

    def __repr__(self) -> str:  # 'done', not <HandlerState.DONE: 'done'>, in a test's diff
        return repr(self.value)


def handler_state(value: object) -> HandlerState | None:
    """A stored state, or None for one this version does not know (a newer one wrote it)."""
    try:
        return HandlerState(str(value))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Turn:
    """One handler's turn at one attempt."""

    handler: str
    state: HandlerState
    error: str = ""

    def to_list(self) -> list[str]:
        return [self.handler, str(self.state), self.error]

    @classmethod
    def from_list(cls, value: Any) -> Turn | None:
        if not isinstance(value, list | tuple) or len(value) != 3:
            return None
        state = handler_state(value[1])
        if state is None:
            return None
        return cls(str(value[0]), state, str(value[2]))


def turns_of(values: Any) -> tuple[Turn, ...]:
    found = (Turn.from_list(v) for v in values) if isinstance(values, list | tuple) else ()
    return tuple(turn for turn in found if turn is not None)


def states_of(values: Any) -> dict[str, HandlerState]:
    if not isinstance(values, dict):
        return {}
    found = {str(name): handler_state(state) for name, state in values.items()}
    return {name: state for name, state in found.items() if state is not None}


# The stored values of the failed states, and of the succeeded ones.
FAILURES = frozenset({HandlerState.FAILED, HandlerState.PERMANENT})
SUCCEEDED = frozenset({HandlerState.DONE.value, HandlerState.STALE.value})


def failure_summary(turns: list[list[str]]) -> str:
    """What an attempt's failed turns (as stored: [name, state, error]) say, `handler:
    error` each: the event's last error."""
    return "; ".join(f"{t[0]}: {t[2]}" for t in turns if t[1] in FAILURES)


# Strings as JSON, by the C function `json` itself uses: the encoder's own entry point
# builds a new encoder on every call, most of what writing an attempt cost the settlement.
_string = json.encoder.encode_basestring_ascii
encode_json = json.JSONEncoder(separators=(",", ":")).encode


def attempt_json(number: int, ended_at: float, status: str, error: str, turns: Any) -> str:
    """An attempt as its ledger field keeps it; its error only when its turns do not say it.
    `turns` as the meta stores them: lists of three strings."""
    listed = ",".join(f"[{_string(t[0])},{_string(t[1])},{_string(t[2])}]" for t in turns)
    kept = "" if error == failure_summary(turns) else f',"error":{_string(error)}'
    return (
        f'{{"n":{int(number)},"at":{ended_at:.3f},"status":{_string(status)},'
        f'"turns":[{listed}]{kept}}}'
    )


def run_field(number: int) -> str:
    """An attempt's field of the ledger record: attempt n overwrites n - KEPT_ATTEMPTS."""
    return f"{RUN_FIELD}{number % KEPT_ATTEMPTS}"


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One attempt as the ledger keeps it, read back: its number, when it ended, how, and
    its turns."""

    number: int
    ended_at: float
    status: str  # the event's state after it: done, retrying, dead...
    error: str  # the attempt's error ("" when none): a summary of failed turns, or why it ended
    turns: tuple[Turn, ...]

    @classmethod
    def from_json(cls, raw: bytes | str) -> AttemptRecord | None:
        try:
            value = json.loads(raw)
            turns = turns_of(value.get("turns"))
            error = value.get("error")
            return cls(
                int(value["n"]),
                float(value["at"]),
                str(value["status"]),
                str(error) if error is not None else failure_summary(_lists(turns)),
                turns,
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def _lists(turns: tuple[Turn, ...]) -> list[list[str]]:
    return [turn.to_list() for turn in turns]


def lasting_states(attempts: tuple[AttemptRecord, ...]) -> dict[str, HandlerState]:
    """Where each handler stands after these attempts (oldest first): its last turn's state."""
    return {turn.handler: turn.state for attempt in attempts for turn in attempt.turns}


def told_by_turns(handlers: dict[str, str], turns: list[list[str]]) -> bool:
    """True when this attempt's turns say all there is of where the handlers stand: each
    handler succeeded on it (the common case, whose `handlers` field is then left empty)."""
    if len(handlers) != len(turns):
        return False
    return all(t[1] in SUCCEEDED and handlers.get(t[0]) == t[1] for t in turns)


def attempts_of(fields: dict[str, bytes]) -> tuple[AttemptRecord, ...]:
    """The attempts a ledger record keeps, oldest first."""
    found = (AttemptRecord.from_json(v) for k, v in fields.items() if k.startswith(RUN_FIELD))
    return tuple(sorted((a for a in found if a is not None), key=lambda a: a.number))


def cut_error(error: str) -> str:
    return error if len(error) <= ERROR_LIMIT else error[: ERROR_LIMIT - 1] + "~"
