"""What the `webhooks` subcommands share: settings, a Redis connection, time arguments."""

from __future__ import annotations

import base64
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.connection import OPERATOR, sync_client
from app.logs import terminal_text
from app.redis_errors import describe
from app.redis_target import safe_where
from app.settings import ConfigError, Settings
from workers.ops.shard_fanout import Fanout
from workers.ops.target import Target, resolve_target


def cell(value: object) -> str:
    """Text for one line of a terminal (a table cell, a field): every control escaped."""
    return terminal_text(value)


def block(value: object) -> str:
    """Text of several lines (a payload, a traceback): newlines and tabs kept, the rest escaped."""
    return terminal_text(value, keep_lines=True)


class CommandError(click.ClickException):
    """An error for the terminal; its message may quote stored data, so it is escaped."""

    def format_message(self) -> str:
        return cell(self.message)


_TARGET = "webhooks.target"


def load_settings() -> Settings:
    """The settings, pointed at the Redis `resolve_target` picks (REDIS_URL, else this
    checkout's `make run` stack, else the default)."""
    target = resolve_target()
    context = click.get_current_context(silent=True)
    if context is not None:
        context.meta[_TARGET] = target
    try:
        return Settings.load(**target.overrides)
    except (ConfigError, ValueError) as exc:
        hint = f" ({target.hint()})" if target.origin in ("default", "stopped") else ""
        raise CommandError(f"{exc}{hint}") from None


def where(url: str) -> str:
    """Where a Redis URL points (host and port, a unix socket, sentinels), never its
    password; a URL that does not parse (several hosts, a typo) is described, not raised."""
    return safe_where(url)


def _say_target(settings: Settings) -> Target | None:
    """Which Redis the command uses, said once on stderr; a stopped `make run` stack is an
    error that says how to start it."""
    context = click.get_current_context(silent=True)
    target: Target | None = context.meta.get(_TARGET) if context is not None else None
    if target is not None and target.down:
        raise CommandError(target.hint())
    if context is not None and target is not None and not context.meta.get(_TARGET + ".said"):
        context.meta[_TARGET + ".said"] = True
        cluster = settings.cluster_target
        place = cluster.where if cluster is not None else where(settings.redis_url)
        click.echo(f"redis: {place} ({target.describe()})", err=True)
    return target


@contextmanager
def every_shard(settings: Settings) -> Iterator[Fanout]:
    """The shards a command reads and acts on (`shard_fanout.py`): the one Redis, on its
    connection (its errors said as `redis_connection` says them), or each shard of the
    cluster, each on its own (`Fanout.answered`): a shard that fails is named while the
    others answer, and the exit status is then 1."""
    if settings.cluster_target is None:
        with redis_connection(settings) as connection:
            yield Fanout(settings, connection)
        return
    _say_target(settings)
    fanout = Fanout(settings, None)
    yield fanout
    if fanout.failed:  # after the command's output, from the shards that answered
        sys.exit(1)


@contextmanager
def redis_connection(settings: Settings) -> Iterator[Redis]:
    """The settings' Redis, built as every process builds it (Sentinel's primary when
    REDIS_SENTINELS is set); which one is said once on stderr. A failure is one line:
    where, what, and how to point the command elsewhere."""
    target = _say_target(settings)
    try:
        connection = sync_client(settings, OPERATOR)
    except ConfigError as exc:  # on a cluster, for now (`app/connection.py`)
        raise CommandError(str(exc)) from None
    try:
        yield connection
    except RedisError as exc:
        unreachable = isinstance(exc, RedisConnectionError | RedisTimeoutError)
        lead = "cannot reach Redis at" if unreachable else "Redis at"
        line = describe(exc, settings.redis_target)
        # What to do next, unless the error already says which variable to check.
        if target is not None and unreachable and target.origin not in line:
            line += f"; {target.hint()}"
        raise CommandError(f"{lead} {line}") from None
    except ConfigError as exc:  # e.g. WEBHOOK_REPLICA_ACK_MODE=waitaof on a Redis without it
        raise CommandError(str(exc)) from None
    finally:
        connection.close()


def parse_time(value: str) -> float:
    """Unix seconds, or ISO 8601 (a time without a zone is UTC). Never NaN or infinite:
    Python's float() takes "nan" and "inf", which Redis then refuses as a score."""
    text = value.strip()
    error = click.BadParameter(
        f"{value!r} is neither unix seconds nor an ISO 8601 time (2026-11-30T08:00:00Z)"
    )
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise error
        return seconds
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise error from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


F = TypeVar("F", bound=Callable[..., Any])


class TimeParam(click.ParamType):  # type: ignore[type-arg]
    name = "TIME"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        return value if isinstance(value, float) else parse_time(str(value))


TIME = TimeParam()


T = TypeVar("T")


def json_option(help_text: str = "One JSON object per line.") -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def print_table(header: Sequence[str], rows: Iterable[Sequence[object]], indent: str = "") -> None:
    """A header row, then one row per item; every column padded but the last, which holds
    the longest text (an error). Cells are escaped for the terminal. Indented, it is a
    section of a `show`, under its heading."""
    lines = [tuple(header)] + [tuple(cell(value) for value in row) for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    for line in lines:
        padded = [text.ljust(width) for text, width in zip(line, widths, strict=False)]
        click.echo(indent + "  ".join([*padded, line[-1]]).rstrip())


def print_field(name: str, value: object) -> None:
    """One `name: value` line of a `show`, the values aligned; None is shown as `-`."""
    click.echo(f"{name + ':':<13} {cell(value if value is not None else '-')}")


def print_listing(
    items: Sequence[T],
    as_json: bool,
    as_dict: Callable[[T], dict[str, Any]],
    header: Sequence[str],
    as_row: Callable[[T], Sequence[object]],
    summary: str,
) -> None:
    """Every list the command prints has this one shape, on stdout. With --json: one JSON
    object per line and nothing else (count them with `wc -l`). Otherwise: a header row,
    one row per item, and the count as the last line (alone when there is nothing)."""
    if as_json:
        for item in items:
            click.echo(json.dumps(as_dict(item)))
        return
    if items:
        print_table(header, [as_row(item) for item in items])
    click.echo(summary)


def payload_fields(raw: bytes) -> dict[str, str]:
    """A payload in JSON output: as text when it is UTF-8, else its exact bytes in base64
    (the receiver accepts UTF-16 and UTF-32 JSON, which text would corrupt)."""
    try:
        return {"payload": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"payload_base64": base64.b64encode(raw).decode()}
