"""`webhooks dead show` and `dead list` speak to a person: text, not Python's reprs, and a
source that does not exist is said to."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.conftest import webhooks
from workers.ops.show_text import print_fields


@pytest.fixture
def dead_letter(make_dead_letters: Callable[..., list[str]]) -> str:
    [job_id] = make_dead_letters([("evt_0", "order.created", "crm down")], webhook_max_retries=0)
    return job_id


def _fields(output: str) -> dict[str, str]:
    """The `name: value` lines of a show, up to its first section."""
    fields: dict[str, str] = {}
    for line in output.splitlines():
        name, colon, value = line.partition(":")
        if not colon or " " in name:
            break
        fields[name] = value.strip()
    return fields


def test_dead_show_prints_no_python_reprs(dead_letter: str) -> None:
    result = webhooks("dead", "show", dead_letter)
    assert result.exit_code == 0, result.output
    fields = _fields(result.stdout)
    assert (fields["permanent"], fields["headers"]) == ("no", "(none)")
    assert fields["event_id"] == "evt_0" and fields["requeues"] == "0"
    assert not any(repr_ in result.stdout for repr_ in ("{}", "False", "True", "None"))


def test_dead_show_pretty_prints_a_json_payload_as_the_page_does(dead_letter: str) -> None:
    result = webhooks("dead", "show", dead_letter)
    payload = result.stdout.split("payload:\n", 1)[1].split("\ntraceback", 1)[0]
    assert payload.startswith('{\n  "id": "evt_0",\n  "type": "order.created",\n')


def test_dead_show_ends_with_the_handlers_frames_alone(dead_letter: str) -> None:
    result = webhooks("dead", "show", dead_letter)
    heading, _, traceback = result.stdout.partition(
        "\ntraceback (your handlers' frames; all of it: --traceback full):\n"
    )
    assert heading and traceback.startswith("tests.conftest.sync_crm failed:\n")
    assert "tests/conftest.py" in traceback and "ValueError: crm down" in traceback
    assert "workers/runtime" not in traceback and "/rq/" not in traceback


def test_dead_show_traceback_full_adds_the_workers_and_rqs_frames(dead_letter: str) -> None:
    result = webhooks("dead", "show", dead_letter, "--traceback", "full")
    traceback = result.stdout.split("\ntraceback:\n", 1)[1]
    assert traceback.startswith("Traceback (most recent call last):")
    assert "workers/runtime/runner.py" in traceback
    assert traceback.rstrip().endswith("ValueError: crm down")


def test_dead_show_json_keeps_the_traceback_as_stored(dead_letter: str) -> None:
    shown = json.loads(webhooks("dead", "show", dead_letter, "--json").stdout)
    assert shown["traceback"].startswith("tests.conftest.sync_crm failed:\n")
    assert "workers/runtime/runner.py" in shown["traceback"]


def test_headers_are_one_escaped_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    print_fields({"headers": {"X-Event": "ping", "X-Note": "a\x1b[2Jb"}, "permanent": True})
    assert capsys.readouterr().out == (
        "headers:\n  X-Event: ping\n  X-Note: a\\x1b[2Jb\npermanent:    yes\n"
    )


def test_dead_list_of_a_source_that_does_not_exist_says_so(dead_letter: str) -> None:
    result = webhooks("dead", "list", "--source", "nope")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == "Error: no source nope (configured: inbound)"


def test_a_bulk_command_of_a_source_that_does_not_exist_says_so(dead_letter: str) -> None:
    result = webhooks("dead", "requeue", "--source", "nope")
    assert result.exit_code == 1 and "no source nope" in result.stderr
