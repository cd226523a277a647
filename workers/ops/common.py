"""What the `webhooks` subcommands share: settings, a Redis connection, time arguments."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import click
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.connection import OPERATOR, sync_client
from app.redis_errors import describe
from app.redis_target import safe_where
from app.settings import ConfigError, Settings

# Terminal control: C0 and C1 controls, DEL, and the invisible or reordering format
# characters (zero-width, bidi overrides). A payload or an error message holding ESC can
# rewrite an operator's screen, set the window title, or hide text; BEL rings; CR overwrites.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_CONTROL_IN_BLOCK = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cell(value: object) -> str:
    """Text for one line of a terminal (a table cell, a field): every control escaped."""
    return _CONTROL.sub(_escaped, str(value))


def block(value: object) -> str:
    """Text of several lines (a payload, a traceback): newlines and tabs kept, the rest escaped."""
    return _CONTROL_IN_BLOCK.sub(_escaped, str(value))


class CommandError(click.ClickException):
    """An error for the terminal; its message may quote stored data, so it is escaped."""

    def format_message(self) -> str:
        return cell(self.message)


def load_settings() -> Settings:
    try:
        return Settings.load()
    except (ConfigError, ValueError) as exc:
        raise CommandError(str(exc)) from None


def where(url: str) -> str:
    """Where a Redis URL points (host and port, a unix socket, sentinels), never its
    password; a URL that does not parse (several hosts, a typo) is described, not raised."""
    return safe_where(url)


@contextmanager
def redis_connection(settings: Settings) -> Iterator[Redis]:
    """The settings' Redis, built as every process builds it (Sentinel's primary when
    REDIS_SENTINELS is set). A failure is one line: where, what, what to check."""
    connection = sync_client(settings, OPERATOR)
    try:
        yield connection
    except RedisError as exc:
        unreachable = isinstance(exc, RedisConnectionError | RedisTimeoutError)
        lead = "cannot reach Redis at" if unreachable else "Redis at"
        raise CommandError(f"{lead} {describe(exc, settings.redis_target)}") from None
    except ConfigError as exc:  # e.g. WEBHOOK_REPLICA_ACK_MODE=waitaof on a Redis without it
        raise CommandError(str(exc)) from None
    finally:
        connection.close()


def parse_time(value: str) -> float:
    """Unix seconds, or ISO 8601 (a time without a zone is UTC)."""
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither unix seconds nor an ISO 8601 time (2026-11-30T08:00:00Z)"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


class TimeParam(click.ParamType):  # type: ignore[type-arg]
    name = "TIME"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        return value if isinstance(value, float) else parse_time(str(value))


TIME = TimeParam()


def echo_rows(
    rows: Iterable[dict[str, Any]], as_json: bool, line: Callable[[dict[str, Any]], str]
) -> None:
    """Each row as one JSON object per line (--json), or as the given text line (whose
    values the caller passes through `cell`)."""
    for row in rows:
        click.echo(json.dumps(row) if as_json else line(row))


def payload_fields(raw: bytes) -> dict[str, str]:
    """A payload in JSON output: as text when it is UTF-8, else its exact bytes in base64
    (the receiver accepts UTF-16 and UTF-32 JSON, which text would corrupt)."""
    try:
        return {"payload": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"payload_base64": base64.b64encode(raw).decode()}
