"""uvicorn's, RQ's and waitress's log lines, in our format and at a level that says what they are.

Left alone, each library writes its own look (`INFO:     Started server process`, RQ's
`20:18:41 Worker 9a48…: cleaning group registries`) into a stream that is otherwise one JSON
object per line, and on a terminal says every startup and shutdown step, plus RQ's
maintenance every interval. Routed here, their records go through the `webhooks` handler
(JSON or text, as configured), and:

- RQ's periodic maintenance and pub/sub bookkeeping go to DEBUG in every format;
- on a terminal (text), the startup and shutdown steps the stack already says in one line
  (`receiver started`, honcho's `web.1 stopped`) go to DEBUG too; JSON keeps them at INFO;
- uvicorn's access line becomes a `request` line with method, path, status and client. On a
  terminal it is left out where it would repeat a line: a delivery (its state line says
  it) or an answer below 400 (the probes); JSON keeps every one, with the client address.

The receiver's process gets this from uvicorn's `--log-config app/uvicorn_logging.json`
(Procfile), so from uvicorn's first line; the worker from `run_worker`; the dashboard's
waitress from `run_dashboard`.
"""

from __future__ import annotations

import logging

from app.logs import LineFormatter, chosen_format, configure_logging, logger, stderr_handler

# Format strings (record.msg) as RQ 3.0 and uvicorn 0.54 write them.
PERIODIC = frozenset(
    {
        "Worker %s: cleaning registries for queue: %s",
        "Worker %s: cleaning group registries",
        "Worker %s: subscribing to channel %s",
        "Worker %s: unsubscribing from channel %s",
        # waitress 3: a request waited for one of the dashboard's threads (its page polls
        # every 2.5 s, so two tabs make one wait): routine, not a warning.
        "Task queue depth is %d",
    }
)
LIFECYCLE = frozenset(
    {
        # Logged only when a scheduler takes the lock anew (a refresh is DEBUG already): after
        # a failover, the line that says which worker schedules retries now.
        "Acquired scheduler lock for %s",
        "*** Listening on %s...",
        "Scheduler for %s started with PID %s",
        "Scheduler stopping, releasing locks for %s...",
        "Scheduler with PID %d has stopped",
        "Worker %s [PID %d]: warm shut down requested",
        "Started server process [%d]",
        "Waiting for application startup.",
        "Application startup complete.",
        "Uvicorn running on %s://%s:%d (Press CTRL+C to quit)",
        "Uvicorn running on %s://[%s]:%d (Press CTRL+C to quit)",
        "Shutting down",
        "Waiting for application shutdown.",
        "Application shutdown complete.",
        "Finished server process [%d]",
    }
)
# waitress formats its listening line before logging it (`Serving on http://host:port`);
# the dashboard prints its own.
LIFECYCLE_PREFIXES = ("Serving on ",)
ACCESS_LOGGER = "uvicorn.access"
DELIVERIES = "/webhooks/"


class LibraryLines(logging.Filter):
    """Sets each library record's level (and the access line's fields) as described above;
    drops what is then below the `webhooks` logger's level."""

    def __init__(self, formatter: LineFormatter) -> None:
        super().__init__()
        self.formatter = formatter

    def filter(self, record: logging.LogRecord) -> bool:
        # uvicorn's coloured copy of the message: ANSI codes, and the same text again.
        record.__dict__.pop("color_message", None)
        terminal = not self.formatter.writes_json()
        if record.name == ACCESS_LOGGER:
            return _access(record, terminal)
        routine = isinstance(record.msg, str) and (
            record.msg in PERIODIC
            or (terminal and (record.msg in LIFECYCLE or record.msg.startswith(LIFECYCLE_PREFIXES)))
        )
        if routine:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return record.levelno >= logger.getEffectiveLevel()


def _access(record: logging.LogRecord, terminal: bool) -> bool:
    args = record.args
    if not isinstance(args, tuple) or len(args) != 5:
        return True  # not the line uvicorn 0.54 writes: passed on as it is
    client, method, path, _version, status = (str(arg) for arg in args)
    delivery = method == "POST" and path.startswith(DELIVERIES)
    if terminal and (delivery or not status.isdigit() or int(status) < 400):
        return False
    record.msg, record.args = "request", ()
    record.method, record.path, record.client = method, path, client
    record.status = int(status) if status.isdigit() else status
    return True


def library_handler() -> logging.Handler:
    """The handler uvicorn's log config names (`app/uvicorn_logging.json`)."""
    handler = stderr_handler(chosen_format())
    assert isinstance(handler.formatter, LineFormatter)
    handler.addFilter(LibraryLines(handler.formatter))
    configure_logging()  # the `webhooks` logger's level decides what passes
    return handler


def route_library_logs(*names: str) -> None:
    """Send these libraries' loggers to the `webhooks` handler, as `library_handler` does."""
    handler = library_handler()
    for name in names:
        library = logging.getLogger(name)
        library.handlers = [handler]
        library.propagate = False
