"""Log lines: JSON for machines, one readable line for a person at a terminal."""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.logs import LineFormatter, chosen_format, log_state, logger


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
