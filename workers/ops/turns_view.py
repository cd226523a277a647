"""How `events show` and `dead show` present each handler of an event (`app/turns.py`):
where it stands, and its turn at each attempt.

The same JSON shapes feed `--json` and the text, so both always say the same. The text is
sections of indented tables under a heading, every cell escaped for the terminal: an error
is a handler's exception message, which often quotes what the provider sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import click

from app.formats import iso
from app.turns import FAILURES, AttemptRecord, HandlerState, Turn
from workers.ops.common import plural, print_field, print_table

INDENT = "  "


class TurnJson(TypedDict):
    handler: str
    state: str
    error: str


class AttemptJson(TypedDict):
    attempt: int
    ended_at: str | None
    status: str
    error: str
    turns: list[TurnJson]


def states_json(states: dict[str, HandlerState]) -> dict[str, str]:
    return {name: str(state) for name, state in states.items()}


def turns_json(turns: Sequence[Turn]) -> list[TurnJson]:
    return [TurnJson(handler=t.handler, state=str(t.state), error=t.error) for t in turns]


def attempts_json(log: Sequence[AttemptRecord]) -> list[AttemptJson]:
    return [
        AttemptJson(
            attempt=a.number,
            ended_at=iso(a.ended_at),
            status=a.status,
            error=a.error,
            turns=turns_json(a.turns),
        )
        for a in log
    ]


def print_states(states: dict[str, str]) -> None:
    if not states:
        print_field("handlers", None)
        return
    click.echo("handlers:")
    print_table(("HANDLER", "STATE"), states.items(), INDENT)


def print_turns(heading: str, turns: list[TurnJson]) -> None:
    if not turns:
        print_field(heading, None)
        return
    click.echo(f"{heading}:")
    rows = [(t["handler"], t["state"], t["error"] or "-") for t in turns]
    print_table(("HANDLER", "STATE", "ERROR"), rows, INDENT)


def print_attempts(log: list[AttemptJson] | None, left_out: int | None) -> None:
    """Each attempt the ledger keeps, a line per handler's turn; None: the ledger keeps no
    record of the event any more."""
    if log is None:
        print_field("attempt log", "- (no longer kept in the ledger)")
        return
    if not log and not left_out:
        print_field("attempt log", None)
        return
    click.echo("attempt log:")
    if left_out:
        click.echo(f"{INDENT}{plural(left_out, 'earlier attempt')} not kept")
    rows = [row for attempt in log for row in _attempt_rows(attempt)]
    if rows:
        print_table(("ATTEMPT", "ENDED AT", "HANDLER", "STATE", "ERROR"), rows, INDENT)


def _attempt_rows(attempt: AttemptJson) -> list[tuple[object, ...]]:
    """A row per turn. An attempt that ran no handler (none matched, the worker died before
    one ended), or that ended on an error no turn carries (a timeout after a success), gets
    a row of its own: its status and error."""
    number, ended = attempt["attempt"], attempt["ended_at"] or "-"
    rows: list[tuple[object, ...]] = [
        (number, ended, t["handler"], t["state"], t["error"] or "-") for t in attempt["turns"]
    ]
    failures = {str(state) for state in FAILURES}
    unexplained = attempt["error"] and not any(t["state"] in failures for t in attempt["turns"])
    if not rows or unexplained:
        rows.append((number, ended, "-", attempt["status"], attempt["error"] or "-"))
    return rows
