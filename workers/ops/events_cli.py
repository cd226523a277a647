"""`webhooks events ...`: did we get evt_123, and what happened to it?"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import click
from redis import Redis

from app.formats import iso
from app.jobstate import EventStatus
from app.settings import Settings
from workers.ops.common import (
    TIME,
    CommandError,
    block,
    cell,
    every_shard,
    json_option,
    load_settings,
    payload_fields,
    plural,
    print_field,
    print_listing,
)
from workers.ops.event_names import event_named
from workers.ops.events_page.search import PAGE, EventSearch, Query
from workers.ops.ledger import EventLedger, LedgerRecord
from workers.ops.shard_fanout import Fanout
from workers.ops.turns_view import attempts_json, print_attempts, print_states, states_json

STATUSES = [str(s) for s in EventStatus]
T = TypeVar("T")


@click.group()
def events() -> None:
    """The event ledger: every accepted event, kept WEBHOOK_LEDGER_TTL (30 days)."""


def _ledger(settings: Settings, connection: Redis) -> EventLedger:
    return EventLedger(settings.keys, connection)


def _answered(fanout: Fanout, work: Callable[[EventLedger], T]) -> list[T]:
    """`work` on each shard's ledger (one Redis: its ledger), of the shards that answered."""
    pairs = fanout.answered(lambda settings, connection: work(_ledger(settings, connection)))
    return [value for _, value in pairs]


EVENTS_HEADER = ("RECEIVED", "SOURCE", "STATUS", "TRIES", "TYPE", "EVENT ID", "LAST ERROR")


def _row(record: LedgerRecord) -> tuple[object, ...]:
    return (
        iso(record.received_at),
        record.source,
        record.status,
        record.attempts,
        record.type or "-",
        record.id,
        record.last_error or "-",
    )


@events.command("show")
@click.argument("source", metavar="SOURCE[/EVENT_ID]")
@click.argument("event_id", required=False)
@json_option("As one JSON object.")
def events_show(source: str, event_id: str | None, as_json: bool) -> None:
    """One event: its status, attempts, last error, times, where each handler stands, each
    handler's turn at every attempt kept, and the payload.

    The event: SOURCE EVENT_ID, or SOURCE/EVENT_ID (split on the first `/`: an event id may
    hold `/`, a source name never does)."""
    source, event_id = event_named(source, event_id)
    settings = load_settings()
    if source not in settings.sources:
        raise click.BadParameter(
            f"unknown source {source!r}; configured: {', '.join(settings.sources)}",
            param_hint="SOURCE",
        )
    with every_shard(settings) as fanout:
        found = _answered(fanout, lambda ledger: ledger.get(source, event_id))
        record = next((r for r in found if r is not None), None)
        if record is None and fanout.failed:
            named = f"{cell(source)}/{cell(event_id)}"
            click.echo(f"{named}: not in the shards that answered", err=True)
            return
        if record is None:
            raise CommandError(
                f"no record of {source} event {event_id!r}: not received, or older than "
                "WEBHOOK_LEDGER_TTL"
            )
        _print_record(record, as_json)


def _print_record(record: LedgerRecord, as_json: bool) -> None:
    shown = record.summary()
    if record.trace_id:  # the delivery's trace, to look up in the tracing backend
        shown["trace_id"] = record.trace_id
    handlers = states_json(record.handlers)
    attempt_log = attempts_json(record.attempt_log)
    if as_json:
        turns = {
            "handlers": handlers,
            "attempt_log": attempt_log,
            "attempts_left_out": record.attempts_left_out,
        }
        click.echo(json.dumps({**shown, **turns, **payload_fields(record.payload or b"")}))
        return
    for key, value in shown.items():
        print_field(key, value)
    # Before the payload, which may run to pages.
    print_states(handlers)
    print_attempts(attempt_log, record.attempts_left_out)
    click.echo("payload:")
    click.echo(block((record.payload or b"").decode("utf-8", errors="replace")))


# The dashboard's word for a dead letter (RQ's failed registry), taken as `dead`.
FAILED = "failed"


def _more(shown: int, total: int) -> str:
    return (
        f"{shown} of {total} events, the newest ({total - shown} more: raise --limit, or "
        "narrow with --since/--until/--type)"
    )


@events.command("list")
@click.option("--source", help="Only this source.")
@click.option(
    "--status",
    type=click.Choice([*STATUSES, FAILED]),
    help="Only events in this state (`failed` is `dead`, as the dashboard says).",
)
@click.option(
    "--type", "type_", help="Only this event type; `invoice.*`: every type starting `invoice.`."
)
@click.option("--id", "event_id", help="Only the event with exactly this id (in any source).")
@click.option("--since", type=TIME, help="Received at or after (ISO 8601 or unix seconds).")
@click.option("--until", type=TIME, help="Received at or before.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=PAGE,
    show_default=True,
    help="Show the newest N events that match.",
)
@json_option()
def events_list(
    source: str | None,
    status: str | None,
    type_: str | None,
    event_id: str | None,
    since: float | None,
    until: float | None,
    limit: int,
    as_json: bool,
) -> None:
    """Events received, newest first, filtered as on the dashboard's Events page."""
    settings = load_settings()
    if source is not None and source not in settings.sources:
        raise click.BadParameter(f"unknown source {source!r}", param_hint="--source")
    wanted = EventStatus.DEAD if status == FAILED else EventStatus(status) if status else None
    query = Query(source, event_id, type_, wanted, since, until)
    with every_shard(settings) as fanout:
        if event_id:
            pages = _answered(fanout, lambda ledger: _by_id(ledger, query, settings))
            found = _newest([rows for rows, _ in pages])
            stripped = any(page_stripped for _, page_stripped in pages)
            total = len(found)
        else:
            newest = _answered(fanout, lambda ledger: _newest_matching(ledger, query, limit))
            found = _newest([rows for _, rows in newest])
            total = sum(count for count, _ in newest)
            stripped = False
        _print_found(found, total, stripped, limit, as_json)


def _print_found(
    found: list[LedgerRecord], total: int, stripped: bool, limit: int, as_json: bool
) -> None:
    if stripped:
        note = "no event has exactly that id; shown: the id without the spaces around it"
        click.echo(note, err=True)
    shown = found[:limit]
    summary = plural(total, "event") if len(shown) == total else ""
    print_listing(
        shown,
        as_json,
        LedgerRecord.summary,
        EVENTS_HEADER,
        _row,
        summary or _more(len(shown), total),
    )
    if as_json and not summary:
        click.echo(_more(len(shown), total), err=True)


def _by_id(
    ledger: EventLedger, query: Query, settings: Settings
) -> tuple[list[LedgerRecord], bool]:
    page = EventSearch(ledger, list(settings.sources)).run(query)
    return page.rows, page.stripped_id


def _newest_matching(
    ledger: EventLedger, query: Query, limit: int
) -> tuple[int, list[LedgerRecord]]:
    """How many records match, and the newest `limit` of them, newest first: over several
    shards, the newest of all are among each shard's newest."""
    # Read oldest first (the index's order), shown newest first as the page does.
    every = reversed(ledger.find(query.source, query.status, query.since, query.until))
    found = [r for r in every if query.matches(str(r.status), r.type)]
    return len(found), found[:limit]


def _newest(per_shard: list[list[LedgerRecord]]) -> list[LedgerRecord]:
    """Every shard's rows, newest first (one shard's rows are already)."""
    if len(per_shard) == 1:
        return per_shard[0]
    merged = [record for rows in per_shard for record in rows]
    return sorted(merged, key=lambda r: r.received_at or 0.0, reverse=True)
