"""The `webhooks` command: run the worker, the dashboard or a dev stack, and operate events.

A command loads only what it runs: this module imports click alone. The worker
(`workers/runtime`), the dashboard (`workers/ops/dashboard.py`) and the dev stack
(`workers/dev`) are imported by the subcommand that runs them; the operator subcommands live
in small modules, imported when one of them is asked for (`lazy_group.py`): `dead_cli`
(dead letters), `events_cli` (the ledger), `replay_cli` (replay of missed events),
`send_cli` (a signed test event), `sources_cli` (what is configured), `config_cli`.
"""

from __future__ import annotations

import os
import sys

import click

from workers.ops.lazy_group import Lazy, LazyGroup

# Each one's summary is the first sentence of its docstring (`webhooks --help` lists it).
SUBCOMMANDS = {
    "config": Lazy("workers.ops.config_cli:config", "What is configured, and whether it can run."),
    "dead": Lazy(
        "workers.ops.dead_cli:dead",
        "Dead letters: events whose handler failed every attempt, or raised PermanentError.",
    ),
    "events": Lazy(
        "workers.ops.events_cli:events",
        "The event ledger: every accepted event, kept WEBHOOK_LEDGER_TTL (30 days).",
    ),
    "replay": Lazy(
        "workers.ops.replay_cli:replay",
        "Fetch missed events from a provider (`replay SOURCE`: Stripe's events, GitHub's "
        "failed deliveries) or from the ledger (`replay ledger SOURCE`); only what is "
        "missing is enqueued.",
    ),
    "send": Lazy(
        "workers.ops.send_cli:send",
        "Sign a test event as SOURCE's provider does and post it to the receiver.",
    ),
    "sources": Lazy(
        "workers.ops.sources_cli:sources",
        "The configured sources: provider, URL path, secrets (counted, never shown).",
    ),
}


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS)
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
    from app.settings import ConfigError
    from workers.ops.common import CommandError, load_settings
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
    from app.settings import ConfigError
    from workers.ops.common import CommandError, load_settings
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
