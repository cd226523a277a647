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

from app.jobstate import EventStatus
from app.settings import Settings, SourceConfig
from workers.ops.common import TIME, CommandError, load_settings, redis_connection
from workers.ops.provider_apis import MAX_MESSAGE
from workers.ops.redact import Redactor
from workers.ops.replay import Counts, ReplayError, replay_github, replay_ledger, replay_stripe

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
    with redis_connection(settings) as redis, httpx.Client(timeout=30) as client:

        def action(progress: Callable[[Counts], None]) -> Counts:
            if source.provider == "stripe":
                return replay_stripe(settings, source, redis, client, since, until, progress)
            assert repo is not None and hook_id is not None
            return replay_github(
                settings, source, redis, client, repo, hook_id, since, until, progress
            )

        _run(as_json, Redactor.of(settings), action, _UNREADABLE)


class _ReplayGroup(click.Group):
    """`replay SOURCE ...` and `replay provider SOURCE ...` read a provider's API, `replay
    ledger SOURCE ...` the stored events.

    A source may be named like a subcommand (`ledger`, `provider`). `replay ledger --since
    T` cannot be the ledger form, which needs a SOURCE: it is the provider form of the source
    named `ledger`. So a word that names a subcommand is that subcommand when what follows
    holds a positional argument, an option only the subcommand knows, or --help; otherwise
    it is the source of the provider form. `replay provider NAME` is never ambiguous."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        provider = self.commands["provider"]
        if args and (args[0] not in self.commands or _is_source(ctx, provider, args)):
            # Named by the source, so that its usage and errors read as what was typed:
            # `webhooks replay stripe ...`, not `webhooks replay provider`.
            ctx.meta[_IMPLICIT] = True
            return args[0], provider, args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Both forms, as they are typed."""
        formatter.write_usage(ctx.command_path, "SOURCE --since TIME [OPTIONS]")
        formatter.write_usage(
            ctx.command_path, "ledger SOURCE --since TIME [OPTIONS]", prefix=" " * len("Usage: ")
        )


_IMPLICIT = "webhooks.replay.implicit"


class _ProviderCommand(click.Command):
    """`replay provider SOURCE`, also run as `replay SOURCE`: then its usage is that form."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if ctx.parent is not None and ctx.parent.meta.get(_IMPLICIT):
            formatter.write_usage(ctx.command_path, "--since TIME [OPTIONS]")
        else:
            super().format_usage(ctx, formatter)


def _is_source(ctx: click.Context, provider: click.Command, args: list[str]) -> bool:
    """Whether `args[0]`, a subcommand's name, is the SOURCE of the provider form."""
    rest = args[1:]
    if any(arg in ctx.help_option_names for arg in rest):
        return False
    options = {
        name: not option.is_flag
        for option in provider.params
        if isinstance(option, click.Option)
        for name in (*option.opts, *option.secondary_opts)
    }
    skip = False
    for index, arg in enumerate(rest):
        if skip:
            skip = False
        elif arg == "--":
            return index == len(rest) - 1  # what follows `--` is positional
        elif arg.startswith("-") and arg != "-":
            name, equals, _ = arg.partition("=")
            if name not in options:
                return False  # e.g. the ledger's --status: the ledger form
            skip = options[name] and not equals
        else:
            return False  # a SOURCE for the subcommand
    return True


replay = _ReplayGroup(
    "replay",
    help="Fetch missed events from a provider (`replay SOURCE`: Stripe's events, GitHub's "
    "failed deliveries) or from the ledger (`replay ledger SOURCE`); only what is missing "
    "is enqueued. `replay provider SOURCE` is the provider form for any source name, "
    "`ledger` and `provider` included.",
)


@replay.command("provider", cls=_ProviderCommand)
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
    with redis_connection(settings) as redis:

        def action(progress: Callable[[Counts], None]) -> Counts:
            wanted = EventStatus(status) if status else None
            return replay_ledger(
                settings, source_config, redis, since, until, wanted, progress, all_handlers
            )

        _run(as_json, Redactor.of(settings), action)
