"""One JSON line per log record, and one per terminal state of a delivery.

States: accepted, duplicate, rejected (with a reason), done, ignored, retry_scheduled,
dead_lettered, requeued. Each line names the source, event id and type; none ever carries a
secret or a payload.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any

logger = logging.getLogger("webhooks")

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        extra = {k: v for k, v in vars(record).items() if k not in _RESERVED}
        if "state" not in extra:
            line["msg"] = record.getMessage()
        line.update(extra)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is now, not the one that existed at setup."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure_logging(level: int = logging.INFO) -> None:
    """Send the `webhooks` logger to stderr as JSON lines (once per process)."""
    if any(isinstance(h.formatter, JsonFormatter) for h in logger.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


# A type is kept whole for dispatch, but a log line shows at most this much of it.
MAX_LOGGED_TYPE = 200


def log_state(state: str, source: str, event_id: str, event_type: str, **fields: Any) -> None:
    level = logging.WARNING if state in {"rejected", "dead_lettered"} else logging.INFO
    if len(event_type) > MAX_LOGGED_TYPE:
        event_type = f"{event_type[:MAX_LOGGED_TYPE]}… ({len(event_type)} characters)"
    extra = {"state": state, "source": source, "event_id": event_id, "type": event_type, **fields}
    if not _json_to_stderr() or not logger.isEnabledFor(level):
        logger.log(level, state, extra=extra)
        return
    # The line JsonFormatter would write, without a LogRecord and a write per request:
    # on the receiver, lines of one event-loop tick go out in one write.
    head = {"ts": round(time.time(), 3), "level": logging.getLevelName(level).lower()}
    _write_soon(
        json.dumps({**head, "logger": logger.name, **extra}, default=str, ensure_ascii=False)
    )


def _json_to_stderr() -> bool:
    handlers = logger.handlers
    return (
        len(handlers) == 1
        and isinstance(handlers[0], _StderrHandler)
        and type(handlers[0].formatter) is JsonFormatter
    )


_pending: list[str] = []


def _write_soon(line: str) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        sys.stderr.write(line + "\n")
        return
    _pending.append(line)
    if len(_pending) == 1:
        loop.call_soon(_flush)


def _flush() -> None:
    lines = "\n".join(_pending) + "\n"
    _pending.clear()
    sys.stderr.write(lines)
    sys.stderr.flush()


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
