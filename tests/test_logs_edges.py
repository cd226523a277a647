"""Log lines in the cases the common ones do not show: a JSON line with a traceback, a state
line that knows only part of its event, a stderr that cannot say whether it is a terminal,
an access line of another uvicorn."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from app.library_logs import LibraryLines
from app.logs import LineFormatter, logger


def test_a_json_line_with_an_exception_carries_its_whole_traceback() -> None:
    try:
        raise ValueError("cannot parse the order")
    except ValueError:
        record = logger.makeRecord(
            "webhooks", logging.ERROR, __file__, 1, "handler failed", (), sys.exc_info()
        )
    line = json.loads(LineFormatter("json").format(record))
    assert line["exc"].startswith("Traceback (most recent call last):")
    assert line["exc"].endswith("ValueError: cannot parse the order")


def test_a_state_line_names_only_the_parts_of_the_event_it_knows() -> None:
    # A delivery refused before its body was read: no event id, no type yet.
    record = logger.makeRecord(
        "webhooks",
        logging.WARNING,
        __file__,
        1,
        "rejected",
        (),
        None,
        extra={"state": "rejected", "source": "inbound", "reason": "bad_signature"},
    )
    line = LineFormatter("text").format(record)
    assert line.split()[2:] == ["rejected", "inbound", "reason=bad_signature"]


class NoTty(io.StringIO):
    """A stderr some embedding put in place: no `isatty` of its own."""

    def __getattribute__(self, name: str) -> object:
        if name == "isatty":
            raise AttributeError(name)
        return super().__getattribute__(name)


@pytest.mark.parametrize("stream", [NoTty(), io.StringIO()])
def test_auto_writes_json_to_a_stderr_that_cannot_say_it_is_a_terminal(
    monkeypatch: pytest.MonkeyPatch, stream: io.StringIO
) -> None:
    stream.close()  # the StringIO's isatty raises ValueError once closed
    monkeypatch.setattr(sys, "stderr", stream)
    assert LineFormatter("auto").writes_json()


def test_an_access_line_of_another_shape_is_passed_on_as_it_is() -> None:
    # Not the five arguments uvicorn 0.54 gives its access line.
    record = logging.getLogger("uvicorn.access").makeRecord(
        "uvicorn.access", logging.INFO, __file__, 1, "%s %s", ("GET", "/healthz"), None
    )
    assert LibraryLines(LineFormatter("text")).filter(record)
    assert record.getMessage() == "GET /healthz" and not hasattr(record, "method")
