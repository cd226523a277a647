"""`webhooks dead ...`: list, show, requeue and purge dead letters, one by one or in bulk."""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from workers.ops.common import CommandError, block, cell, json_option, plural, print_listing
from workers.ops.dead_letter import DeadLetter, groups
from workers.ops.dead_targets import (
    AllDead,
    Targets,
    apply_each,
    check_source,
    every_dead,
    report_missing,
    resolve_all,
    resolve_events,
    selected,
    selection,
    selection_options,
    targeted,
)
from workers.ops.show_text import print_fields, print_payload
from workers.ops.turns_view import print_attempts, print_states, print_turns

if TYPE_CHECKING:
    from workers.ops.deadletters import DeadLetters


@click.group()
def dead() -> None:
    """Dead letters: events whose handler failed every attempt, or raised PermanentError."""


DEAD_HEADER = ("JOB ID", "SOURCE", "TYPE", "EVENT ID", "TRIES", "FAILED AT", "ERROR")
GROUP_HEADER = ("COUNT", "EXAMPLE JOB ID", "TYPES", "ERROR")


def _row(letter: DeadLetter) -> tuple[object, ...]:
    return (
        letter.job_id,
        letter.source,
        letter.type or "-",
        letter.event_id,
        letter.attempts,
        letter.failed_at or "-",
        letter.error,
    )


def _print_letters(letters: list[DeadLetter], as_json: bool, summary: str) -> None:
    print_listing(letters, as_json, DeadLetter.as_dict, DEAD_HEADER, _row, summary)


@dead.command("list")
@json_option()
@click.option("--group-by", type=click.Choice(["error"]), help="Count dead letters per error.")
@selection_options
def dead_list(as_json: bool, group_by: str | None, **filters: Any) -> None:
    """List the dead letters (optionally filtered, or grouped by error)."""
    with every_dead() as dead:
        chosen = selection(**filters)
        check_source(dead, chosen.source)
        letters = dead.find(chosen)
        if not group_by:
            _print_letters(letters, as_json, plural(len(letters), "dead letter"))
            return
        _print_groups(groups(letters), as_json)


def _print_groups(found: list[dict[str, Any]], as_json: bool) -> None:
    total = sum(g["count"] for g in found)
    print_listing(
        found,
        as_json,
        lambda g: g,
        GROUP_HEADER,
        lambda g: (g["count"], g["example_job_id"], ", ".join(g["types"]) or "-", g["error"]),
        f"{plural(total, 'dead letter')} in {plural(len(found), 'group')}",
    )


@dead.command("show")
@click.argument("name", metavar="ID")
@click.argument("event_id", required=False)
@click.option(
    "--traceback",
    "traceback_part",
    type=click.Choice(["user", "full"]),
    default="user",
    show_default=True,
    help="user: your handlers' frames; full: with the worker's and RQ's frames.",
)
@json_option("As one JSON object (the traceback as stored: both parts).")
def dead_show(name: str, event_id: str | None, traceback_part: str, as_json: bool) -> None:
    """Show one dead letter: its event, headers, where each handler stands, each handler's
    turn at its last attempt and at every attempt the ledger keeps, payload and traceback.
    ID: its job id, SOURCE/EVENT_ID (or SOURCE EVENT_ID), or its event id alone."""
    with every_dead() as dead:
        if event_id is not None:  # SOURCE EVENT_ID: that event exactly
            targets = resolve_events(dead, [(name, event_id)])
            name = f"{name}/{event_id}"
        else:
            targets = resolve_all(dead, (name,))
        job_id = targets.job_ids[0]
        shown = dead.show(job_id, targets.shards[job_id]) if job_id in targets.shards else None
        if shown is None and dead.failed:  # its shard may be one that did not answer
            click.echo(f"{cell(name)} is not a dead letter in the shards that answered", err=True)
            return
        if shown is None:
            raise CommandError(
                f"{name} is not a dead letter (by job id, SOURCE/EVENT_ID or event id)"
            )
        _print_shown(shown, traceback_part, as_json)


def _print_shown(shown: dict[str, Any], traceback_part: str, as_json: bool) -> None:
    from workers.runtime.tracebacks import split_traceback  # rq: after the shards answered

    if as_json:
        click.echo(json.dumps(shown))
        return
    traceback, payload = shown.pop("traceback"), shown.pop("payload")
    handlers, last_turns = shown.pop("handlers"), shown.pop("last_attempt_turns")
    del shown["failed_handlers"]  # the handlers' table says it
    attempt_log, left_out = shown.pop("attempt_log"), shown.pop("attempts_left_out")
    print_fields(shown)
    # Before the payload, which may run to pages.
    print_states(handlers)
    print_turns("last attempt", last_turns)
    print_attempts(attempt_log, left_out)
    print_payload(payload)
    # Last, and apart: what the worker recorded, your frames first unless asked for all.
    parts = split_traceback(traceback) if traceback else None
    if parts is None:
        click.echo("traceback:")
        click.echo(block("(none recorded)"))
    elif traceback_part == "full" or not parts.user:
        click.echo("traceback:")
        click.echo(block(parts.full))
    else:
        click.echo("traceback (your handlers' frames; all of it: --traceback full):")
        click.echo(block(parts.user))


def _purge_dry_run(dead: AllDead, targets: Targets, as_json: bool) -> None:
    letters = targeted(dead, targets)
    _print_letters(letters, as_json, f"would purge {plural(len(letters), 'dead letter')}")
    report_missing(targets, {letter.job_id for letter in letters})


RERUN_HEADER = (*DEAD_HEADER[:-1], "RERUNS", "ERROR")


def _reruns(letter: DeadLetter, all_handlers: bool) -> str:
    """What a requeue of it runs: every handler when it keeps none, else those that have
    not succeeded, by name (when it knows of none, it says which it leaves out)."""
    kept = letter.kept_handlers(all_handlers)
    if not kept:
        return "all"
    return ", ".join(letter.rerun_handlers(all_handlers)) or "all but " + ", ".join(kept)


def _requeue_dry_run(dead: AllDead, targets: Targets, all_handlers: bool, as_json: bool) -> None:
    """The dry run's letters, each with the handlers its requeue would run again."""
    letters = targeted(dead, targets)
    print_listing(
        letters,
        as_json,
        lambda x: {
            **x.as_dict(),
            "rerun_handlers": x.rerun_handlers(all_handlers),
            "kept_handlers": x.kept_handlers(all_handlers),
        },
        RERUN_HEADER,
        lambda x: (*_row(x)[:-1], _reruns(x, all_handlers), x.error),
        f"would requeue {plural(len(letters), 'dead letter')}",
    )
    report_missing(targets, {letter.job_id for letter in letters})


@dead.command("requeue")
@click.argument("job_ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "all_", is_flag=True, help="Every dead letter.")
@click.option("--dry-run", is_flag=True, help="Print what would be requeued; change nothing.")
@click.option(
    "--all-handlers",
    is_flag=True,
    help="Run every handler again, those that succeeded too (default: only the others).",
)
@json_option("The dry run's dead letters, or the result, as JSON.")
@selection_options
def dead_requeue(
    job_ids: tuple[str, ...],
    all_: bool,
    dry_run: bool,
    all_handlers: bool,
    as_json: bool,
    **filters: Any,
) -> None:
    """Put dead letters back on the queue, each with its full retry budget; each runs again
    only its handlers that have not succeeded, unless --all-handlers. Each ID: a job id,
    SOURCE/EVENT_ID, or an event id alone; or SOURCE EVENT_ID... (the first argument a
    source's name), events of that source."""
    with selected(job_ids, all_, filters) as (dead, targets):
        if dry_run:
            _requeue_dry_run(dead, targets, all_handlers, as_json)
        else:
            requeue = partial(_requeue, all_handlers=all_handlers)
            apply_each(dead, requeue, targets, "requeued", as_json)


def _requeue(store: DeadLetters, job_id: str, all_handlers: bool) -> bool:
    return store.requeue(job_id, all_handlers=all_handlers)


def _purge(store: DeadLetters, job_id: str) -> bool:
    return store.purge(job_id)


@dead.command("purge")
@click.argument("job_ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "all_", is_flag=True, help="Every dead letter.")
@click.option("--dry-run", is_flag=True, help="Print what would be purged; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask before purging in bulk.")
@json_option("The dry run's dead letters, or the result, as JSON.")
@selection_options
def dead_purge(
    job_ids: tuple[str, ...],
    all_: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
    **filters: Any,
) -> None:
    """Delete dead letters for good (their event ids stay claimed until the dedupe TTL).
    Each ID: a job id, SOURCE/EVENT_ID, or an event id alone; or SOURCE EVENT_ID... (the
    first argument a source's name), events of that source."""
    with selected(job_ids, all_, filters) as (dead, targets):
        if dry_run:
            _purge_dry_run(dead, targets, as_json)
            return
        if not targets.named and not yes:
            count = plural(len(targets.job_ids), "dead letter")
            click.confirm(f"Delete {count} for good?", abort=True, err=True)
        apply_each(dead, _purge, targets, "purged", as_json)
