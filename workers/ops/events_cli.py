"""`webhooks events ...`: did we get evt_123, and what happened to it?"""

from __future__ import annotations

import json
from typing import Any

import click

from app.jobstate import EventStatus
from app.keys import Keys
from workers.ops.common import (
    TIME,
    CommandError,
    block,
    cell,
    echo_rows,
    load_settings,
    payload_fields,
    redis_connection,
)
from workers.ops.ledger import EventLedger

STATUSES = [str(s) for s in EventStatus]


@click.group()
def events() -> None:
    """The event ledger: every accepted event, kept WEBHOOK_LEDGER_TTL (30 days)."""


def _ledger(connection: Any) -> EventLedger:
    settings = load_settings()
    return EventLedger(Keys(settings.webhook_key_prefix, settings.webhook_queue), connection)


@events.command("show")
@click.argument("source")
@click.argument("event_id")
@click.option("--json", "as_json", is_flag=True, help="As one JSON object.")
def events_show(source: str, event_id: str, as_json: bool) -> None:
    """One event: its status, attempts, last error, times and payload."""
    settings = load_settings()
    if source not in settings.sources:
        raise click.BadParameter(
            f"unknown source {source!r}; configured: {', '.join(settings.sources)}",
            param_hint="SOURCE",
        )
    with redis_connection(settings) as connection:
        record = _ledger(connection).get(source, event_id)
    if record is None:
        raise CommandError(
            f"no record of {source} event {event_id!r}: not received, or older than "
            "WEBHOOK_LEDGER_TTL"
        )
    shown = record.summary()
    if as_json:
        click.echo(json.dumps({**shown, **payload_fields(record.payload or b"")}))
        return
    for key, value in shown.items():
        click.echo(f"{key + ':':<13} {cell(value if value is not None else '-')}")
    click.echo("payload:")
    click.echo(block((record.payload or b"").decode("utf-8", errors="replace")))


@events.command("list")
@click.option("--source", help="Only this source.")
@click.option("--status", type=click.Choice(STATUSES), help="Only events in this state.")
@click.option("--since", type=TIME, help="Received at or after (ISO 8601 or unix seconds).")
@click.option("--until", type=TIME, help="Received at or before.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def events_list(
    source: str | None, status: str | None, since: float | None, until: float | None, as_json: bool
) -> None:
    """Events received in a window, oldest first."""
    settings = load_settings()
    if source is not None and source not in settings.sources:
        raise click.BadParameter(f"unknown source {source!r}", param_hint="--source")
    wanted = EventStatus(status) if status else None
    with redis_connection(settings) as connection:
        found = _ledger(connection).find(source, wanted, since, until)
    records = [r.summary() for r in found]
    echo_rows(
        records,
        as_json,
        lambda r: (
            f"{r['received_at']}  {cell(r['source']):<10} {cell(r['status']):<8} "
            f"{r.get('attempts', 0):>2}  {cell(r.get('type') or '-'):<28} {cell(r['id'])}  "
            f"{cell(r.get('last_error', ''))}".rstrip()
        ),
    )
    click.echo(f"{len(records)} event(s)", err=True)
