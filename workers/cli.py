"""The `webhooks` command: run the worker or the dashboard, and handle dead letters."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import click
from redis import Redis
from redis.exceptions import RedisError

from app.settings import ConfigError, Settings
from workers.deadletters import DeadLetter, DeadLetters


def _settings() -> Settings:
    try:
        return Settings.load()
    except (ConfigError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


def _where(url: str) -> str:
    """Host, port and database of a Redis URL, never its password."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}{parts.path or ''}"


@contextmanager
def _dead_letters() -> Iterator[DeadLetters]:
    settings = _settings()
    connection = Redis.from_url(settings.redis_url, socket_connect_timeout=3)
    try:
        yield DeadLetters(settings, connection)
    except RedisError as exc:
        raise click.ClickException(
            f"cannot reach Redis at {_where(settings.redis_url)}: {type(exc).__name__}"
        ) from None
    finally:
        connection.close()


@click.group()
def main() -> None:
    """Webhook receiver operations. Configuration comes from the environment or .env."""


@main.command()
@click.option("--burst", is_flag=True, help="Exit once the queue is empty.")
def worker(burst: bool) -> None:
    """Run an RQ worker (with the retry scheduler) that runs the handlers."""
    from workers.worker import run_worker

    try:
        run_worker(_settings(), burst=burst)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        pass


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, envvar="HOST")
@click.option("--port", default=9181, show_default=True, type=int, envvar="PORT")
def dashboard(host: str, port: int) -> None:
    """Serve rq-dashboard for the webhook queue, behind HTTP Basic auth."""
    from workers.dashboard import run_dashboard

    try:
        run_dashboard(_settings(), host, port)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
def dev() -> None:
    """Run Redis (unless REDIS_URL is set) and every Procfile process: `make run`."""
    from workers.devstack import run_stack

    run_stack()


@main.group()
def dead() -> None:
    """Dead letters: events whose handler failed every attempt, or raised PermanentError."""


def _table(rows: list[DeadLetter]) -> None:
    header = ("JOB ID", "SOURCE", "TYPE", "EVENT ID", "TRIES", "FAILED AT", "ERROR")
    lines = [header] + [
        (
            r.job_id,
            r.source,
            r.type or "-",
            r.event_id,
            str(r.attempts),
            r.failed_at or "-",
            r.error,
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        click.echo("  ".join([*cells, line[-1]]).rstrip())


@dead.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def dead_list(as_json: bool) -> None:
    """List the dead letters."""
    with _dead_letters() as store:
        rows = store.list()
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.as_dict()))
    elif rows:
        _table(rows)
        click.echo(f"{len(rows)} dead letter(s)", err=True)
    else:
        click.echo("no dead letters", err=True)


@dead.command("show")
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="As one JSON object.")
def dead_show(job_id: str, as_json: bool) -> None:
    """Show one dead letter: its event, headers, payload and last traceback."""
    with _dead_letters() as store:
        shown = store.show(job_id)
    if shown is None:
        raise click.ClickException(f"{job_id} is not a dead letter")
    if as_json:
        click.echo(json.dumps(shown))
        return
    traceback, payload = shown.pop("traceback"), shown.pop("payload")
    for key, value in shown.items():
        click.echo(f"{key + ':':<13} {json.dumps(value) if isinstance(value, dict) else value}")
    click.echo("payload:")
    click.echo(payload)
    click.echo("traceback:")
    click.echo(traceback or "(none recorded)")


def _each(
    ids: tuple[str, ...], all_: bool, store: DeadLetters, verb: str, action: Callable[[str], bool]
) -> None:
    if bool(ids) == all_:
        raise click.UsageError("give JOB_ID... or --all (not both)")
    targets = store.ids() if all_ else list(ids)
    done, missing = 0, []
    for job_id in targets:
        if action(job_id):
            done += 1
        else:
            missing.append(job_id)
    click.echo(f"{verb} {done} dead letter(s)")
    if missing:
        click.echo(f"not dead letters (skipped): {' '.join(missing)}", err=True)
        sys.exit(1)


@dead.command("requeue")
@click.argument("job_ids", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every dead letter.")
def dead_requeue(job_ids: tuple[str, ...], all_: bool) -> None:
    """Put dead letters back on the queue, each with its full retry budget."""
    with _dead_letters() as store:
        _each(job_ids, all_, store, "requeued", store.requeue)


@dead.command("purge")
@click.argument("job_ids", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every dead letter.")
@click.option("--yes", is_flag=True, help="Do not ask before purging --all.")
def dead_purge(job_ids: tuple[str, ...], all_: bool, yes: bool) -> None:
    """Delete dead letters for good (their event ids stay claimed until the dedupe TTL)."""
    if all_ and not yes:
        click.confirm("Delete every dead letter for good?", abort=True)
    with _dead_letters() as store:
        _each(job_ids, all_, store, "purged", store.purge)
