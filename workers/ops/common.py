"""What the `webhooks` subcommands share: settings, a Redis connection, time arguments."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import click
from redis import Redis
from redis.exceptions import RedisError

from app.logs import terminal_text
from app.settings import ConfigError, Settings


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


def load_settings() -> Settings:
    try:
        return Settings.load()
    except (ConfigError, ValueError) as exc:
        raise CommandError(str(exc)) from None


def where(url: str) -> str:
    """Host, port and database of a Redis URL, never its password."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}{parts.path or ''}"


@contextmanager
def redis_connection(settings: Settings) -> Iterator[Redis]:
    connection = Redis.from_url(settings.redis_url, socket_connect_timeout=3)
    try:
        yield connection
    except RedisError as exc:
        raise CommandError(
            f"cannot reach Redis at {where(settings.redis_url)}: {type(exc).__name__}"
        ) from None
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
