"""The `webhooks` command: run the worker, the dashboard or a dev stack, and operate events.

Subcommands live in small modules: `cli_dead` (dead letters), `cli_events` (the ledger),
`cli_replay` (replay of missed events).
"""

from __future__ import annotations

import click

from app.settings import ConfigError
from workers.cli_common import CommandError, load_settings
from workers.cli_dead import dead
from workers.cli_events import events
from workers.cli_replay import replay


@click.group()
def main() -> None:
    """Webhook receiver operations. Configuration comes from the environment or .env."""


@main.command()
@click.option("--burst", is_flag=True, help="Exit once the queue is empty.")
def worker(burst: bool) -> None:
    """Run an RQ worker (with the retry scheduler) that runs the handlers."""
    from workers.run import run_worker

    try:
        run_worker(load_settings(), burst=burst)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:
        pass


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, envvar="HOST")
@click.option("--port", default=9181, show_default=True, type=int, envvar="PORT")
def dashboard(host: str, port: int) -> None:
    """Serve rq-dashboard for the webhook queue, behind HTTP Basic auth."""
    from workers.dashboard import run_dashboard

    try:
        run_dashboard(load_settings(), host, port)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


@main.command()
def dev() -> None:
    """Run Redis (unless REDIS_URL is set) and every Procfile process: `make run`."""
    from workers.devstack import run_stack

    run_stack()


main.add_command(dead)
main.add_command(events)
main.add_command(replay)
