"""The `webhooks` command: run the worker, the dashboard or a dev stack, and operate events.

The worker (`workers/runtime`), the dashboard (`workers/ops/dashboard.py`) and the dev
stack (`workers/dev`) are imported only by the subcommand that runs them; the operator
subcommands are imported with the command, and live in small modules: `dead_cli` (dead
letters), `events_cli` (the ledger), `replay_cli` (replay of missed events), `send_cli` (a
signed test event), `sources_cli` (what is configured).
"""

from __future__ import annotations

import os
import sys

import click

from app.settings import ConfigError
from workers.ops.common import CommandError, load_settings
from workers.ops.config_cli import config
from workers.ops.dead_cli import dead
from workers.ops.events_cli import events
from workers.ops.replay_cli import replay
from workers.ops.send_cli import send
from workers.ops.sources_cli import sources


@click.group()
def main() -> None:
    """Webhook receiver operations. Configuration comes from the environment or .env."""


@main.command()
@click.option("--burst", is_flag=True, help="Exit once the queue is empty.")
@click.option(
    "--path",
    "paths",
    multiple=True,
    default=["."],
    show_default=True,
    help="Where WEBHOOK_HANDLERS modules are looked for, before installed packages.",
)
def worker(burst: bool, paths: tuple[str, ...]) -> None:
    """Run an RQ worker (with the retry scheduler) that runs the handlers."""
    from workers.runtime.run import run_worker

    # As `rq worker --path` does: handler modules next to the Procfile need no install.
    sys.path[:0] = [os.path.abspath(p) for p in paths if os.path.abspath(p) not in sys.path]
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
    from workers.ops.dashboard import run_dashboard

    try:
        run_dashboard(load_settings(), host, port)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


@main.command()
def dev() -> None:
    """Run Redis (unless REDIS_URL is set) and every Procfile process: `make run`."""
    from workers.dev.stack import run_stack

    run_stack()


main.add_command(config)
main.add_command(dead)
main.add_command(events)
main.add_command(replay)
main.add_command(send)
main.add_command(sources)
