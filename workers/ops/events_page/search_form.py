"""The search form's fields, read as `webhooks events list` reads its options.

A bad field is named in a fixed sentence and left out, never echoed. `status=failed` is
`dead` (rq-dashboard's word for a dead letter, as the command's `--status failed`), and the
page size is one of a few choices, as the command's `--limit` is any.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from app.jobstate import EventStatus
from workers.ops.common import parse_time
from workers.ops.events_page.requeued import valid
from workers.ops.events_page.search import PAGE, Cursor, Query

MAX_FIELD = 512
# The command's word, accepted here too.
FAILED = "failed"
LIMITS = (25, PAGE, 100, 200)
# The form's fields, as links carry them (the pager's, the bulk actions').
FIELDS = ("source", "id", "type", "status", "since", "until", "requeued", "limit", "after")
# The fields that choose events (not where a page starts nor its size): a bulk action's.
FILTERS = ("source", "id", "type", "status", "since", "until", "requeued")


def form_of(args: Mapping[str, str], names: tuple[str, ...] = FIELDS) -> dict[str, str]:
    """The fields as given, bounded: what the form shows again and the links carry."""
    return {name: (args.get(name) or "")[:MAX_FIELD] for name in names}


def carried(form: Mapping[str, str]) -> dict[str, Any]:  # Any: url_for's keywords
    """The search's fields a link carries on (the pager's, the chart's ranges): those given,
    without the cursor, which each link sets itself."""
    return {k: v for k, v in form.items() if v and k in FIELDS and k != "after"}


def parse_query(args: Mapping[str, str], sources: list[str]) -> tuple[Query, list[str]]:
    """The search the fields ask for, and a fixed sentence for each field left out."""
    errors: list[str] = []

    def field(name: str) -> str | None:
        value = (args.get(name) or "").strip()[:MAX_FIELD]
        return value or None

    # The id exactly as typed: ` evt_1 ` is a legal id of its own, not `evt_1` (the search
    # tries the stripped id only when the exact one finds nothing, and says so).
    event_id = (args.get("id") or "")[:MAX_FIELD] or None

    source = field("source")
    if source is not None and source not in sources:
        errors.append("Unknown source: choose one of the list.")
        source = None
    status = None
    if (given := field("status")) is not None:
        try:
            status = EventStatus.DEAD if given == FAILED else EventStatus(given)
        except ValueError:
            errors.append("Unknown status: choose one of the list.")
    times: dict[str, float | None] = {}
    for name in ("since", "until"):
        value = field(name)
        try:
            times[name] = parse_time(value) if value is not None else None
        except click.BadParameter:
            errors.append(f"{name}: expected ISO 8601 (2026-11-30T08:00:00Z) or unix seconds.")
            times[name] = None
    limit = None
    if (size := field("limit")) is not None:
        if size.isdigit() and int(size) in LIMITS:
            limit = int(size)
        else:
            errors.append(f"Page size: one of {', '.join(map(str, LIMITS))}.")
    after = Cursor.decode(args.get("after", "")) if args.get("after") else None
    # A bulk requeue's events: a token its result linked to, never put in a key otherwise.
    requeued = field("requeued")
    if requeued is not None and not valid(requeued):
        errors.append("That list of requeued events is not one this page made.")
        requeued = None
    query = Query(
        source,
        event_id,
        field("type"),
        status,
        times["since"],
        times["until"],
        after,
        limit,
        requeued,
    )
    return query, errors
