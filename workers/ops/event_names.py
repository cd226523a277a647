"""How a command names an event: `SOURCE EVENT_ID` or `SOURCE/EVENT_ID`, both everywhere.

A source is a name of the configuration (`WEBHOOK_SOURCES`), which holds no `/`; an event
id is the provider's and may hold anything, `/` included (`a/b/c`). So the rule is:
- two arguments (SOURCE EVENT_ID) are taken as given: the id whole, whatever it holds;
- one argument (SOURCE/EVENT_ID) is split on its first `/`: the source before it, the id
  (any later `/` included) after it.
The dead-letter commands also take a job id or an event id alone (`dead_targets.py`), and
several at once: there, arguments are SOURCE EVENT_ID... when there are two or more and the
first is a configured source's name (write SOURCE/EVENT_ID, or the job id, for an event whose
id is a source's name).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

FORMS = "SOURCE EVENT_ID or SOURCE/EVENT_ID"


def event_named(first: str, event_id: str | None) -> tuple[str, str]:
    """(source, event id) from `SOURCE EVENT_ID` (event_id given) or `SOURCE/EVENT_ID`."""
    if event_id is not None:
        return first, event_id
    source, slash, rest = first.partition("/")
    if not slash or not source or not rest:
        raise click.UsageError(f"name the event as {FORMS} (got {first!r})")
    return source, rest


def source_first(names: Sequence[str], sources: Sequence[str]) -> list[tuple[str, str]] | None:
    """The events of `SOURCE EVENT_ID...` (two or more arguments, the first a configured
    source's name); None when the arguments are not that form."""
    if len(names) < 2 or names[0] not in sources:
        return None
    return [(names[0], event_id) for event_id in names[1:]]
