"""One log line per record, and one per terminal state of a delivery.

States: accepted, duplicate, rejected (with a reason), done, ignored, retry_scheduled,
dead_lettered, requeued. Each line names the source, event id and type; none ever carries a
secret or a payload.

Two looks for the same line (WEBHOOK_LOG_FORMAT): `json`, one object per line for log
shippers, and `text`, for a person at a terminal. The default, `auto`, is text when stderr
is a terminal and JSON otherwise, decided per line so a redirected stderr gets JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from typing import Any

logger = logging.getLogger("webhooks")

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
FORMATS = ("auto", "json", "text")

# Terminal control: C0 and C1 controls, DEL, and the invisible or reordering format
# characters (zero-width, bidi overrides). A payload, a type or an error message holding ESC
# can rewrite an operator's screen, set the window title or hide text; BEL rings; CR
# overwrites the line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_CONTROL_BUT_LINES = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(value: object, keep_lines: bool = False) -> str:
    """Text safe to print on a terminal: every control character shown as an escape
    (`\\x1b`); with `keep_lines`, newlines and tabs stay (a payload, a traceback)."""
    pattern = _CONTROL_BUT_LINES if keep_lines else _CONTROL
    return pattern.sub(_escaped, str(value))


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _RESERVED}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        extra = _fields(record)
        if "state" not in extra:
            line["msg"] = record.getMessage()
        line.update(extra)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


_BARE = re.compile(r"^[^\s\"'=]{1,200}$")


def _value(value: object) -> str:
    """A string bare when it reads unambiguously, else quoted; anything else as compact JSON."""
    if isinstance(value, str):
        text = value if _BARE.match(value) else json.dumps(value, ensure_ascii=False)
    else:
        text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    return terminal_text(text)


class TextFormatter(logging.Formatter):
    """`14:03:12 info  accepted inbound evt_1 order.created job_id=inbound-a8… ms=1.2`: the
    same fields as the JSON line, on one line, with what a person looks for first."""

    def format(self, record: logging.LogRecord) -> str:
        extra = _fields(record)
        head = [time.strftime("%H:%M:%S", time.localtime(record.created))]
        head.append(f"{record.levelname.lower():<7}")
        state = extra.pop("state", None)
        if state is not None:
            head.append(str(state))
            for name in ("source", "event_id", "type"):
                if name in extra:
                    head.append(_value(extra.pop(name)) or '""')
        else:
            head.append(terminal_text(record.getMessage()))
        tail = [f"{key}={_value(value)}" for key, value in extra.items()]
        if record.exc_info:
            # One line still: the exception itself; the traceback belongs in JSON or the job.
            lines = self.formatException(record.exc_info).strip().splitlines()
            tail.append(f"exc={_value(lines[-1] if lines else 'exception')}")
        return " ".join(head + tail)


def chosen_format() -> str:
    """WEBHOOK_LOG_FORMAT from the environment, else from `.env`, else auto. Settings
    validate the value; an unknown one here only falls back to auto."""
    value = os.environ.get("WEBHOOK_LOG_FORMAT")
    if value is None and os.path.isfile(".env"):
        from dotenv import dotenv_values

        value = dotenv_values(".env").get("WEBHOOK_LOG_FORMAT")
    value = (value or "auto").strip().lower()
    return value if value in FORMATS else "auto"


class LineFormatter(logging.Formatter):
    """JSON or text as configured; `auto` asks whether stderr is a terminal at each line."""

    def __init__(self, choice: str) -> None:
        super().__init__()
        self.choice = choice
        self.json = JsonFormatter()
        self.text = TextFormatter()

    def format(self, record: logging.LogRecord) -> str:
        return self.json.format(record) if self.writes_json() else self.text.format(record)

    def writes_json(self) -> bool:
        return self.choice == "json" or (self.choice == "auto" and not _stderr_is_terminal())


_tty: list[Any] = [None, False]


def _stderr_is_terminal() -> bool:
    # Asked once per stderr object, not with a system call per line.
    stream = sys.stderr
    if _tty[0] is not stream:
        try:
            _tty[:] = [stream, stream.isatty()]
        except (AttributeError, ValueError):  # replaced by an object without it, or closed
            _tty[:] = [stream, False]
    return bool(_tty[1])


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is now, not the one that existed at setup."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def stderr_handler(log_format: str) -> logging.Handler:
    """One line per record to the current stderr, in `log_format` (auto, json, text)."""
    handler = _StderrHandler()
    handler.setFormatter(LineFormatter(log_format))
    return handler


def configure_logging(level: int = logging.INFO, log_format: str | None = None) -> None:
    """Send the `webhooks` logger to stderr, one line per record (once per process)."""
    if any(isinstance(h, _StderrHandler) for h in logger.handlers):
        return
    logger.addHandler(stderr_handler(log_format or chosen_format()))
    logger.setLevel(level)
    logger.propagate = False


# A type is kept whole for dispatch, but a log line shows at most this much of it.
MAX_LOGGED_TYPE = 200


def log_state(state: str, source: str, event_id: str, event_type: str, **fields: Any) -> None:
    level = logging.WARNING if state in {"rejected", "dead_lettered"} else logging.INFO
    if len(event_type) > MAX_LOGGED_TYPE:
        event_type = f"{event_type[:MAX_LOGGED_TYPE]}… ({len(event_type)} characters)"
    if not _json_to_stderr() or not logger.isEnabledFor(level):
        extra = {"state": state, "source": source, "event_id": event_id, "type": event_type}
        logger.log(level, state, extra=extra | fields)
        return
    # The line JsonFormatter would write, without a LogRecord and a write per request:
    # on the receiver, lines of one event-loop tick go out in one write.
    line = {
        "ts": round(time.time(), 3),
        "level": "warning" if level == logging.WARNING else "info",
        "logger": logger.name,
        "state": state,
        "source": source,
        "event_id": event_id,
        "type": event_type,
        **fields,
    }
    _write_soon(_LINE.encode(line))


# json.dumps with an option builds an encoder per call: one, for every line.
_LINE = json.JSONEncoder(default=str)


def _json_to_stderr() -> bool:
    handlers = logger.handlers
    return (
        len(handlers) == 1
        and isinstance(handlers[0], _StderrHandler)
        and isinstance(handlers[0].formatter, LineFormatter)
        and handlers[0].formatter.writes_json()
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
