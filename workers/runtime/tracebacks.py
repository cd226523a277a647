"""A failed attempt's traceback as the worker stores it: the user's own frames first.

A handler's exception reaches RQ through a dozen frames of this package's runner, RQ's
job and the Python plumbing between them: formatted as it is, the user's one or two
frames come last, under lines nobody needs. Every reader shows the stored text as it is
(rq-dashboard's failed list and job page put it in one <pre>), so the order is fixed here:
for each handler that failed, its name, its frames outside the plumbing and its
exception; then a separator line; then the full traceback, as RQ would have stored it.
The full part comes last so that the text's last line is still the exception, which
`last_error` reads.

`split_traceback` gives the two parts back; a text stored before this change has no
separator, and is all full part.
"""

from __future__ import annotations

import asyncio.runners
import os
import runpy
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import rq.job

import app.turns
import workers.event
from app.turns import FAILURES, Turn
from workers.runtime.attempt import HandlersFailed

# A line of its own between the two parts. A message line that happens to read the same
# is indented in the user part, so the first such line is always the separator.
SEPARATOR = "----- the full traceback (with the worker's and RQ's frames) -----"


def _plumbing() -> tuple[tuple[str, ...], frozenset[str]]:
    """The directories and files whose frames are not the user's: this package's, RQ's,
    and the stdlib's that run a handler (asyncio runs the async ones)."""
    # A module of each: `app` is a namespace package, with no __file__ of its own.
    inside = (app.turns, workers.event, rq.job, asyncio.runners)
    roots = tuple(os.path.dirname(str(m.__file__)) + os.sep for m in inside)
    return roots, frozenset(str(m.__file__) for m in (runpy, threading))


_ROOTS, _FILES = _plumbing()


@dataclass(frozen=True, slots=True)
class Failure:
    """One handler's failure at an attempt ("" as handler: the job is not a handler's)."""

    handler: str
    error: BaseException


@dataclass(frozen=True, slots=True)
class TracebackParts:
    """A stored traceback, split: the user's frames ("" for a text stored before the
    split), and the full traceback."""

    user: str
    full: str


def failures_of(error: BaseException, meta: Any) -> list[Failure]:
    """Each handler failure the job's exception stands for. `HandlersFailed` carries them;
    any other exception is the last failing turn's in the job's meta (a timeout ends the
    attempt in the handler it interrupts)."""
    # The class, not a `failures` attribute: a user's exception may well have one.
    if isinstance(error, HandlersFailed) and error.failures:
        return [Failure(name, exc) for name, exc in error.failures]
    turns = meta.get("turns") if isinstance(meta, dict) else None
    failed = [
        turn.handler
        for turn in map(Turn.from_list, turns if isinstance(turns, list) else [])
        if turn is not None and turn.state in FAILURES
    ]
    return [Failure(failed[-1] if failed else "", error)]


def stored_traceback(error: BaseException, failures: Sequence[Failure]) -> str:
    """What the worker stores for a failed attempt that raised `error`."""
    formatted = traceback.TracebackException.from_exception(error)
    full = "".join(formatted.format())
    # The raised exception's stack, once formatted whole, is cut for its user part: one
    # walk of the stack, not two (the common case: one handler failed).
    user = [_user_part(f, formatted if f.error is error else None) for f in failures]
    # Always both parts, even with no user frame (the exception line is still worth
    # reading first): a text without the separator is one stored before the split, so a
    # message that forges the separator line in the full part cannot split it.
    return "\n".join(user) + f"\n{SEPARATOR}\n" + full


def split_traceback(stored: str) -> TracebackParts:
    user, separator, full = stored.partition(f"\n{SEPARATOR}\n")
    if not separator:
        return TracebackParts("", stored)
    return TracebackParts(user, full)


def _user_part(failure: Failure, formatted: traceback.TracebackException | None) -> str:
    """The failure's traceback with the plumbing's frames left out (none left: the error
    came from the plumbing itself, and its exception line is all there is)."""
    if formatted is None:  # source lines looked up only for the frames kept
        formatted = traceback.TracebackException.from_exception(failure.error, lookup_lines=False)
    for exc in _chain(formatted):
        kept = [frame for frame in exc.stack if not _is_plumbing(frame.filename)]
        exc.stack = traceback.StackSummary.from_list(kept)
    lines = "".join(formatted.format()).split("\n")
    text = "\n".join(f"  {line}" if line == SEPARATOR else line for line in lines)
    return f"{failure.handler or 'the job'} failed:\n{text}"


def _chain(exc: traceback.TracebackException) -> Iterator[traceback.TracebackException]:
    """The exception, its cause or context, and a group's members, each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        todo += getattr(current, "exceptions", None) or []


def _is_plumbing(filename: str) -> bool:
    return filename.startswith(_ROOTS) or filename in _FILES
