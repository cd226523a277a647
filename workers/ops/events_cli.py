"""`webhooks events ...`: did we get evt_123, and what happened to it?"""

from __future__ import annotations

import json

import click
from redis import Redis

from app.formats import iso
from app.jobstate import EventStatus
from app.keys import Keys
from app.settings import Settings
from workers.ops.common import (
    TIME,
    CommandError,
    block,
    json_option,
    load_settings,
    payload_fields,
    plural,
    print_field,
    print_listing,
    redis_connection,
)
from workers.ops.ledger import EventLedger, LedgerRecord
from workers.ops.turns_view import attempts_json, print_attempts, print_states, states_json

STATUSES = [str(s) for s in EventStatus]


@click.group()
def events() -> None:
    """The event ledger: every accepted event, kept WEBHOOK_LEDGER_TTL (30 days)."""


def _ledger(settings: Settings, connection: Redis) -> EventLedger:
    return EventLedger(Keys(settings.webhook_key_prefix, settings.webhook_queue), connection)


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
@click.argument("source")
@click.argument("event_id")
@json_option("As one JSON object.")
def events_show(source: str, event_id: str, as_json: bool) -> None:
    """One event: its status, attempts, last error, times, where each handler stands, each
    handler's turn at every attempt kept, and the payload."""
    settings = load_settings()
    if source not in settings.sources:
        raise click.BadParameter(
            f"unknown source {source!r}; configured: {', '.join(settings.sources)}",
            param_hint="SOURCE",
        )
    with redis_connection(settings) as connection:
        record = _ledger(settings, connection).get(source, event_id)
    if record is None:
        raise CommandError(
            f"no record of {source} event {event_id!r}: not received, or older than "
            "WEBHOOK_LEDGER_TTL"
        )
    shown = record.summary()
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


@events.command("list")
@click.option("--source", help="Only this source.")
@click.option("--status", type=click.Choice(STATUSES), help="Only events in this state.")
@click.option("--since", type=TIME, help="Received at or after (ISO 8601 or unix seconds).")
@click.option("--until", type=TIME, help="Received at or before.")
@json_option()
def events_list(
    source: str | None, status: str | None, since: float | None, until: float | None, as_json: bool
) -> None:
    """Events received in a window, oldest first."""
    settings = load_settings()
    if source is not None and source not in settings.sources:
        raise click.BadParameter(f"unknown source {source!r}", param_hint="--source")
    wanted = EventStatus(status) if status else None
    with redis_connection(settings) as connection:
        found = _ledger(settings, connection).find(source, wanted, since, until)
    print_listing(
        found, as_json, LedgerRecord.summary, EVENTS_HEADER, _row, plural(len(found), "event")
    )
