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
from typing import TYPE_CHECKING

import click

from workers.ops.lazy_group import Lazy, LazyGroup

if TYPE_CHECKING:
    from app.settings import Settings

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
@click.option(
    "--shards",
    "shard_spec",
    metavar="N|N-M,...",
    help="On a cluster (REDIS_CLUSTER_NODES): the shards to serve, a process each "
    "(default: every shard).",
)
def worker(burst: bool, paths: tuple[str, ...], shard_spec: str | None) -> None:
    """Run an RQ worker (with the retry scheduler) that runs the handlers."""
    from app.settings import ConfigError
    from workers.ops.common import CommandError, load_settings

    # As `rq worker --path` does: handler modules next to the Procfile need no install.
    sys.path[:0] = [os.path.abspath(p) for p in paths if os.path.abspath(p) not in sys.path]
    try:
        settings = load_settings()
        if settings.cluster_target is not None:
            sys.exit(run_shards(settings, burst, paths, shard_spec))
        if shard_spec is not None:
            raise ConfigError("--shards: shards are a cluster's (REDIS_CLUSTER_NODES is not set)")
        from workers.runtime.run import run_worker

        run_worker(settings, burst=burst)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:
        pass


def run_shards(settings: Settings, burst: bool, paths: tuple[str, ...], spec: str | None) -> int:
    """One shard served here, or a process per shard under a supervisor
    (`workers/runtime/shard_workers.py`)."""
    from app.shards import Shards
    from workers.runtime import shard_workers as sw

    shards = Shards(settings.webhook_shards)
    chosen = sw.parse_shards(spec, shards)
    if len(chosen) > 1:
        return sw.ShardSupervisor(sw.shard_commands(chosen, burst, paths), burst).run()
    sw.claim_rq_prefix(sw.rq_prefix(shards, chosen[0]))
    from workers.runtime.run import run_worker  # imports rq: after its prefix is set

    run_worker(sw.for_shard(settings, chosen[0]), burst=burst)
    return 0


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, envvar="HOST")
@click.option("--port", default=9181, show_default=True, type=int, envvar="PORT")
@click.option(
    "--shard",
    type=click.IntRange(min=0),
    help="On a cluster: this shard's dashboard alone (rq-dashboard under its RQ prefix).",
)
@click.option("--unix-socket", hidden=True, help="Serve on this socket (behind the front).")
def dashboard(host: str, port: int, shard: int | None, unix_socket: str | None) -> None:
    """Serve rq-dashboard for the webhook queue, behind HTTP Basic auth."""
    from app.settings import ConfigError
    from workers.ops.common import CommandError, load_settings

    try:
        settings = load_settings()
        if settings.cluster_target is None:
            if shard is not None:
                raise ConfigError(
                    "--shard: shards are a cluster's (REDIS_CLUSTER_NODES is not set)"
                )
            from workers.ops.dashboard import run_dashboard

            run_dashboard(settings, host, port)
        elif shard is None:
            from workers.ops.dashboard_front import run_front

            run_front(settings, host, port)
        else:
            run_shard_dashboard(settings, shard, host, port, unix_socket)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


def run_shard_dashboard(
    settings: Settings, shard: int, host: str, port: int, unix_socket: str | None
) -> None:
    from app.shards import Shards
    from workers.runtime import shard_workers as sw

    shards = Shards(settings.webhook_shards)
    [chosen] = sw.parse_shards(str(shard), shards)
    sw.claim_rq_prefix(sw.rq_prefix(shards, chosen))
    from workers.ops.dashboard import run_dashboard  # imports rq: after its prefix is set

    run_dashboard(sw.for_shard(settings, chosen), host, port, unix_socket)


@main.command()
@click.option(
    "--cluster",
    is_flag=True,
    help="On a local Redis Cluster of its own (3 primaries + 3 replicas): `make run-cluster`.",
)
def dev(cluster: bool) -> None:
    """Run Redis (unless REDIS_URL is set) and every Procfile process: `make run`."""
    from workers.dev.stack import run_stack

    run_stack(cluster)
