"""Conversions every process needs: what Redis returns as bytes, Unix times as ISO 8601."""

from __future__ import annotations

from datetime import UTC, datetime


def text(value: object) -> str:
    """A key or field Redis returned: ours are UTF-8 (payloads stay bytes, never this)."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def iso(timestamp: float | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC, to the second; None stays None."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
