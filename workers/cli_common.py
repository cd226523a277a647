"""What the `webhooks` subcommands share: settings, a Redis connection, time arguments."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import click
from redis import Redis
from redis.exceptions import RedisError

from app.settings import ConfigError, Settings


def load_settings() -> Settings:
    try:
        return Settings.load()
    except (ConfigError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


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
        raise click.ClickException(
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
    """Each row as one JSON object per line (--json), or as the given text line."""
    for row in rows:
        click.echo(json.dumps(row) if as_json else line(row))


def iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
