"""`webhooks replay ...`: pull back the events an outage made you miss."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import repeat
from typing import TextIO

import click
import httpx
from redis import Redis

from app.jobstate import EventStatus
from app.settings import Settings, SourceConfig
from workers.ops.common import TIME, CommandError, every_shard, load_settings
from workers.ops.provider_apis import MAX_MESSAGE, ReplayError
from workers.ops.provider_replay import replay_github, replay_stripe
from workers.ops.redact import Redactor
from workers.ops.replay_counts import Counts
from workers.ops.replay_group import ProviderCommand, ReplayGroup
from workers.ops.shard_fanout import Fanout

# What `replay ledger --since ...` (or `replay provider --since ...`) meant when no source
# has that name: the subcommand, with its SOURCE forgotten.
_FORGOTTEN = {
    "ledger": "to re-run stored events: `webhooks replay ledger SOURCE --since TIME`",
    "provider": "the explicit form: `webhooks replay provider SOURCE --since TIME`",
}


def _source(settings: Settings, name: str, provider: str | None = None) -> SourceConfig:
    source = settings.sources.get(name)
    if source is None:
        hint = f"; {_FORGOTTEN[name]}" if name in _FORGOTTEN else ""
        raise click.BadParameter(
            f"unknown source {name!r}; configured: {', '.join(settings.sources)}{hint}",
            param_hint="SOURCE",
        )
    if provider is not None and source.provider != provider:
        raise click.BadParameter(
            f"source {name!r} uses provider {source.provider!r}, not {provider!r}",
            param_hint="SOURCE",
        )
    return source


def _counts_text(counts: Counts | None) -> str:
    if counts is None:
        return ""
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.as_dict().items())


@contextmanager
def _progress(as_json: bool, stream: TextIO | None = None) -> Iterator[Callable[[Counts], None]]:
    """A progress bar with the running counts, on a terminal; nothing for --json or a pipe.

    The providers' APIs give no total, so the bar pulses rather than fills."""
    stream = stream or sys.stderr
    if as_json or not stream.isatty():
        yield lambda counts: None
        return
    with click.progressbar(
        repeat(Counts()), label="replaying", file=stream, show_pos=True, item_show_func=_counts_text
    ) as bar:
        yield lambda counts: bar.update(1, counts)


def _report(counts: Counts, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(counts.as_dict()))
    else:
        click.echo(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in counts.as_dict().items()))


# What an API's answer of an unexpected shape raises inside the command: a field missing
# or of the wrong type, a time that does not parse, a body that is not JSON. Its message
# quotes the answer, so it is redacted and printed as one line, never as a traceback.
_UNREADABLE = (LookupError, TypeError, ValueError, AttributeError, httpx.HTTPError)


def _run(
    as_json: bool,
    redact: Callable[[str], str],
    action: Callable[[Callable[[Counts], None]], Counts],
    unreadable: tuple[type[Exception], ...] = (),
) -> None:
    """Run a replay and print its counts. Its errors quote what an API (or Redis) said,
    which may hold a configured secret: `redact` blanks them out before they are printed."""
    try:
        with _progress(as_json) as progress:
            counts = action(progress)
    except ReplayError as exc:
        raise CommandError(redact(str(exc))) from None
    except unreadable as exc:
        what = redact(f"{type(exc).__name__}: {exc}")
        raise CommandError(f"an API's answer could not be read: {what[:MAX_MESSAGE]}") from None
    _report(counts, as_json)


def _provider_replay(
    source_name: str,
    since: float,
    until: float | None,
    as_json: bool,
    repo: str | None,
    hook_id: int | None,
) -> None:
    settings = load_settings()
    source = _source(settings, source_name)
    if source.provider not in ("stripe", "github"):
        raise click.BadParameter(
            f"source {source_name!r} uses provider {source.provider!r}: replay reads the "
            "APIs of stripe and github sources (or use `webhooks replay ledger`)",
            param_hint="SOURCE",
        )
    if source.provider == "github" and (not repo or hook_id is None):
        raise click.UsageError("a github source needs --repo OWNER/NAME and --hook-id")
    with every_shard(settings) as fanout, httpx.Client(timeout=30) as client:

        def action(progress: Callable[[Counts], None]) -> Counts:
            if source.provider == "stripe":
                return replay_stripe(fanout, source, client, since, until, progress)
            assert repo is not None and hook_id is not None
            return replay_github(fanout, source, client, repo, hook_id, since, until, progress)

        _run(as_json, Redactor.of(settings), action, _UNREADABLE)


replay = ReplayGroup(
    "replay",
    help="Fetch missed events from a provider (`replay SOURCE`: Stripe's events, GitHub's "
    "failed deliveries) or from the ledger (`replay ledger SOURCE`); only what is missing "
    "is enqueued. `replay provider SOURCE` is the provider form for any source name, "
    "`ledger` and `provider` included.",
)


@replay.command("provider", cls=ProviderCommand)
@click.argument("source")
@click.option("--since", type=TIME, required=True, help="ISO 8601 or unix seconds.")
@click.option("--until", type=TIME, help="ISO 8601 or unix seconds.")
@click.option("--repo", help="GitHub: OWNER/NAME of the repository of the hook.")
@click.option("--hook-id", type=int, help="GitHub: the hook's id.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def replay_provider(
    source: str,
    since: float,
    until: float | None,
    repo: str | None,
    hook_id: int | None,
    as_json: bool,
) -> None:
    """Replay SOURCE from its provider's API: a stripe source (List Events) or a github
    source (redeliver failed); `replay SOURCE ...` without `provider` does the same."""
    _provider_replay(source, since, until, as_json, repo, hook_id)


@replay.command("ledger")
@click.argument("source")
@click.option("--since", type=TIME, required=True, help="ISO 8601 or unix seconds.")
@click.option("--until", type=TIME, help="ISO 8601 or unix seconds.")
@click.option(
    "--status",
    type=click.Choice([str(s) for s in EventStatus]),
    help="Only events in this state (e.g. dead).",
)
@click.option(
    "--all-handlers",
    is_flag=True,
    help="Run every handler again, those that succeeded too (default: only the others).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def replay_from_ledger(
    source: str,
    since: float,
    until: float | None,
    status: str | None,
    all_handlers: bool,
    as_json: bool,
) -> None:
    """Re-run events stored in the ledger (dead letters get a full retry budget); each runs
    again only its handlers that have not succeeded, unless --all-handlers."""
    settings = load_settings()
    source_config = _source(settings, source)
    wanted = EventStatus(status) if status else None
    with every_shard(settings) as fanout:

        def action(progress: Callable[[Counts], None]) -> Counts:
            if fanout.connection is not None:
                from workers.ops.replay import replay_ledger  # here: rq (`shard_fanout.py`)

                return replay_ledger(
                    settings,
                    source_config,
                    fanout.connection,
                    since,
                    until,
                    wanted,
                    progress,
                    all_handlers,
                )
            return _ledger_on_every_shard(fanout, source_config, since, until, wanted, all_handlers)

        _run(as_json, Redactor.of(settings), action)


def _ledger_on_every_shard(
    fanout: Fanout,
    source: SourceConfig,
    since: float,
    until: float | None,
    wanted: EventStatus | None,
    all_handlers: bool,
) -> Counts:
    """Each shard replays its own ledger's events, in a process of its own; the counts are
    summed (no progress bar: the shards' processes report when they are done)."""

    def replay_mine(settings: Settings, connection: Redis) -> Counts:
        from workers.ops.replay import replay_ledger  # in the shard's process (rq)

        return replay_ledger(
            settings, source, connection, since, until, wanted, lambda _: None, all_handlers
        )

    counts = Counts(
        extra={"requeued": 0, "enqueued": 0, "pending": 0, "no_payload": 0, "untracked": 0}
    )
    for _, answer in fanout.answered(replay_mine):
        counts.add(answer)
    return counts
