"""Handler states and attempts as stored (job meta, ledger fields), read back by a version
that did not write them: what it does not know is left out, never an error."""

from __future__ import annotations

import pytest

from app.turns import AttemptRecord, HandlerState, Turn, states_of, turns_of


def test_a_handler_state_a_newer_version_wrote_is_left_out_of_where_handlers_stand() -> None:
    stored = {"app.sync": "done", "app.mail": "paused"}
    assert states_of(stored) == {"app.sync": HandlerState.DONE}
    assert states_of(None) == {}  # a meta written before handlers were tracked


def test_turns_a_newer_version_wrote_differently_are_left_out() -> None:
    stored = [
        ["app.sync", "failed", "ValueError: no"],
        ["app.mail", "paused", ""],  # a state this version does not know
        ["app.crm", "done"],  # another shape
        "app.old",
    ]
    assert turns_of(stored) == (Turn("app.sync", HandlerState.FAILED, "ValueError: no"),)


@pytest.mark.parametrize("raw", [b"{not json", b'{"n": 1, "at": 2.0}', b"[1, 2]", b'"text"'])
def test_an_attempt_field_that_cannot_be_read_is_skipped(raw: bytes) -> None:
    assert AttemptRecord.from_json(raw) is None


def test_a_handler_state_shows_as_its_stored_value_in_a_failed_assertion() -> None:
    assert repr({"app.sync": HandlerState.DONE}) == "{'app.sync': 'done'}"
