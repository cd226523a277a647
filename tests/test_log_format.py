"""Log lines: JSON for machines, one readable line for a person at a terminal."""

from __future__ import annotations

import datetime
import io
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from honcho.printer import Message, Printer

from app.library_logs import LibraryLines, route_library_logs
from app.logs import LineFormatter, chosen_format, log_state, logger
from workers.dev.procs import LinePrinter, StackManager


@pytest.fixture
def terminal() -> Iterator[io.TextIOWrapper]:
    """A stderr that is a terminal (the far side of a pseudo-terminal)."""
    primary, secondary = os.openpty()
    stream = open(secondary, "w", encoding="utf-8", closefd=True)  # noqa: SIM115
    try:
        yield stream
    finally:
        stream.close()
        os.close(primary)


def format_one(choice: str, state: str = "dead_lettered", **fields: object) -> str:
    record = logger.makeRecord(
        "webhooks",
        logging.WARNING,
        __file__,
        1,
        state,
        (),
        None,
        extra={"state": state, "source": "inbound", "event_id": "evt_2", "type": "demo.flaky"}
        | fields,
    )
    return LineFormatter(choice).format(record)


def test_the_text_line_puts_the_state_and_the_event_first() -> None:
    line = format_one("text", attempt=6, error="RuntimeError: downstream API answered 502")
    assert "\n" not in line
    words = line.split()
    assert words[1:6] == ["warning", "dead_lettered", "inbound", "evt_2", "demo.flaky"]
    assert line.endswith('attempt=6 error="RuntimeError: downstream API answered 502"')


def test_the_json_line_is_unchanged_by_the_text_format() -> None:
    line = json.loads(format_one("json", attempt=6))
    assert (line["state"], line["event_id"], line["attempt"]) == ("dead_lettered", "evt_2", 6)


def test_control_characters_from_senders_are_escaped_in_text_lines() -> None:
    line = format_one("text", error="bad \x1b[2J\x1b]0;owned\x07 note\r\u202e")
    assert not any(c in line for c in ("\x1b", "\x07", "\r", "\u202e"))
    assert "\\u001b[2J" in line or "\\x1b[2J" in line


def test_json_lines_are_ascii_so_no_sender_character_reaches_a_terminal_raw() -> None:
    # C1 controls (CSI is \x9b) and bidi overrides pass JSON's own escaping unless asked.
    error = "bad \x9b2J note \u202eevil caf\u00e9"
    line = format_one("json", error=error)
    assert line.isascii() and json.loads(line)["error"] == error


def test_an_exception_stays_on_one_text_line() -> None:
    try:
        raise ValueError("cannot parse the order")
    except ValueError:
        record = logger.makeRecord(
            "webhooks", logging.ERROR, __file__, 1, "handler failed", (), sys.exc_info()
        )
    line = LineFormatter("text").format(record)
    assert "\n" not in line and line.endswith('exc="ValueError: cannot parse the order"')


def test_auto_writes_text_to_a_terminal_and_json_elsewhere(
    monkeypatch: pytest.MonkeyPatch, terminal: io.TextIOWrapper
) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)
    assert format_one("auto").split()[2] == "dead_lettered"
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert json.loads(format_one("auto"))["state"] == "dead_lettered"


def test_a_chosen_format_holds_whatever_stderr_is(
    monkeypatch: pytest.MonkeyPatch, terminal: io.TextIOWrapper
) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)
    assert json.loads(format_one("json"))["event_id"] == "evt_2"
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert format_one("text").split()[3] == "inbound"


@pytest.mark.parametrize(
    ("environment", "env_file", "expected"),
    [
        (None, None, "auto"),
        ("text", None, "text"),
        ("JSON", None, "json"),
        (None, "WEBHOOK_LOG_FORMAT=text\n", "text"),
        ("json", "WEBHOOK_LOG_FORMAT=text\n", "json"),
        ("fancy", None, "auto"),  # Settings refuses it at startup, naming the variable
    ],
)
def test_the_format_comes_from_the_environment_then_the_env_file(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    environment: str | None,
    env_file: str | None,
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    if environment is not None:
        monkeypatch.setenv("WEBHOOK_LOG_FORMAT", environment)
    if env_file is not None:
        (tmp_path / ".env").write_text(env_file)
    assert chosen_format() == expected


def test_log_state_still_writes_one_line_per_state(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="webhooks"):
        log_state("accepted", "inbound", "evt_1", "order.created", job_id="inbound-1")
    [record] = caplog.records
    assert LineFormatter("text").format(record).count("\n") == 0


# uvicorn's and RQ's records, routed through ours (app/library_logs.py).


@pytest.fixture
def library_line(monkeypatch: pytest.MonkeyPatch) -> Callable[..., str | None]:
    """A library's record as our handler writes it in `choice`, or None when left out."""
    monkeypatch.setattr(logger, "level", logging.INFO)

    def line(choice: str, name: str, msg: str, *args: object, **extra: object) -> str | None:
        record = logging.getLogger(name).makeRecord(
            name, logging.INFO, __file__, 1, msg, args, None, extra=extra or None
        )
        formatter = LineFormatter(choice)
        if not LibraryLines(formatter).filter(record):
            return None
        return formatter.format(record)

    return line


def test_rqs_periodic_maintenance_is_left_out_in_every_format(
    library_line: Callable[..., str | None],
) -> None:
    for choice in ("json", "text"):
        assert (
            library_line(choice, "rq.worker", "Worker %s: cleaning group registries", "w1") is None
        )


def test_rqs_periodic_maintenance_shows_at_debug(
    library_line: Callable[..., str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logger, "level", logging.DEBUG)
    line = library_line("json", "rq.worker", "Worker %s: cleaning group registries", "w1")
    assert line is not None and json.loads(line)["level"] == "debug"


def test_lifecycle_steps_stay_at_info_in_json_without_uvicorns_coloured_copy(
    library_line: Callable[..., str | None],
) -> None:
    line = library_line(
        "json", "uvicorn.error", "Started server process [%d]", 7, color_message="\x1b[36m%d"
    )
    assert line is not None
    assert json.loads(line) | {"ts": 0} == {
        "ts": 0,
        "level": "info",
        "logger": "uvicorn.error",
        "msg": "Started server process [7]",
    }


def test_a_scheduler_taking_the_lock_anew_is_said_at_info_in_json(
    library_line: Callable[..., str | None],
) -> None:
    """After a failover, the line that says which worker schedules retries now."""
    line = library_line("json", "rq.scheduler", "Acquired scheduler lock for %s", "webhooks")
    assert line is not None and json.loads(line)["level"] == "info"


def test_lifecycle_steps_the_stack_already_says_are_left_out_on_a_terminal(
    library_line: Callable[..., str | None],
) -> None:
    assert library_line("text", "uvicorn.error", "Application startup complete.") is None
    assert (
        library_line("text", "rq.scheduler", "Scheduler for %s started with PID %s", "q", 1) is None
    )
    # What is not routine still shows.
    assert library_line("text", "uvicorn.error", "Waiting for connections to close.") is not None


ACCESS = '%s - "%s %s HTTP/%s" %d'


def test_an_access_line_in_json_carries_method_path_status_and_client(
    library_line: Callable[..., str | None],
) -> None:
    line = library_line(
        "json", "uvicorn.access", ACCESS, "10.0.0.9:5123", "POST", "/webhooks/inbound", "1.1", 200
    )
    assert line is not None
    fields = json.loads(line)
    assert fields["msg"] == "request"
    assert (fields["method"], fields["path"], fields["status"], fields["client"]) == (
        "POST",
        "/webhooks/inbound",
        200,
        "10.0.0.9:5123",
    )


def test_on_a_terminal_a_deliverys_or_a_probes_access_line_is_left_out(
    library_line: Callable[..., str | None],
) -> None:
    delivery = ("10.0.0.9:5123", "POST", "/webhooks/inbound", "1.1", 401)
    assert library_line("text", "uvicorn.access", ACCESS, *delivery) is None
    probe = ("10.0.0.9:5123", "GET", "/readyz", "1.1", 200)
    assert library_line("text", "uvicorn.access", ACCESS, *probe) is None


def test_on_a_terminal_an_error_elsewhere_keeps_its_access_line_escaped(
    library_line: Callable[..., str | None],
) -> None:
    wrong = ("10.0.0.9:5123", "POST", "/webhook/inbound\x1b[2J", "1.1", 404)
    line = library_line("text", "uvicorn.access", ACCESS, *wrong)
    assert line is not None and "\x1b" not in line
    assert line.split()[1:3] == ["info", "request"]
    assert "path=/webhook/inbound\\x1b[2J" in line and "status=404" in line


# honcho's manager under `make run` (workers/dev/procs.py).


@pytest.fixture
def manager() -> tuple[StackManager, io.StringIO]:
    out = io.StringIO()
    return StackManager(Printer(out, colour=False)), out


def _said(out: io.StringIO) -> list[str]:
    return [line.split(" | ", 1)[1] for line in out.getvalue().splitlines()]


def test_a_requested_stop_reads_stopping_and_stopped(
    manager: tuple[StackManager, io.StringIO],
) -> None:
    stack, out = manager
    for text in ("SIGTERM received", "sending SIGTERM to web.1 (pid 12)", "web.1 stopped (rc=-15)"):
        stack._system_print(text + "\n")
    stack._system_print("worker.1 stopped (rc=0)\n")
    assert _said(out) == ["stopping", "web.1 stopped", "worker.1 stopped"]


def test_a_process_that_ends_by_itself_says_how(
    manager: tuple[StackManager, io.StringIO],
) -> None:
    stack, out = manager
    stack._system_print("worker.1 stopped (rc=1)\n")
    stack._system_print("web.1 stopped (rc=-15)\n")  # honcho stopped it in turn
    stack._system_print("sending SIGKILL to dashboard.1 (pid 14)\n")
    assert _said(out) == [
        "worker.1 ended with status 1; stopping the others",
        "web.1 stopped",
        "sending SIGKILL to dashboard.1 (pid 14)",
    ]


def test_the_printer_drops_the_time_a_process_line_repeats() -> None:
    out = io.StringIO()
    now = datetime.datetime(2026, 1, 2, 20, 18, 41)
    line = b"20:18:41 info    accepted inbound evt_1 order.created\n"
    LinePrinter(out, colour=False).write(Message("line", line, now, "web.1", None))
    assert out.getvalue() == "20:18:41 web.1 | info    accepted inbound evt_1 order.created\n"


def test_waitress_queue_depth_is_routine_and_its_other_warnings_keep_their_level(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's waitress, as `run_dashboard` routes it: a request that waited for a
    thread (its page polls every 2.5 s) prints nothing; a real warning prints in our format."""
    from waitress.task import ThreadedTaskDispatcher

    monkeypatch.setenv("WEBHOOK_LOG_FORMAT", "json")
    for name in ("waitress", "waitress.queue"):
        monkeypatch.setattr(logging.getLogger(name), "handlers", [])
        monkeypatch.setattr(logging.getLogger(name), "propagate", True)
    monkeypatch.setattr(logger, "level", logging.INFO)
    route_library_logs("waitress")
    capfd.readouterr()
    ThreadedTaskDispatcher().add_task(object())  # no thread to take it: "depth is 1"
    logging.getLogger("waitress").warning("%d thread(s) still running", 2)
    lines = capfd.readouterr().err.splitlines()
    assert [json.loads(line)["msg"] for line in lines] == ["2 thread(s) still running"]


def test_the_dashboard_routes_waitress_through_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    import waitress

    from workers.ops import dashboard

    routed: list[tuple[str, ...]] = []
    monkeypatch.setattr(dashboard, "route_library_logs", lambda *names: routed.append(names))
    monkeypatch.setattr(dashboard, "create_dashboard", lambda settings: object())
    monkeypatch.setattr(waitress, "serve", lambda *args, **kwargs: None)
    dashboard.run_dashboard(object(), "127.0.0.1", 1)  # type: ignore[arg-type]
    assert routed == [("waitress",)]
