"""A job's arguments and meta as RQ stores them, read back: what an older version wrote is
read, what is not an event's job is refused as such (the worker fails it, unread)."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobstate import EventCall, EventStatus, JobMeta, PayloadFormat, UnreadableJob

META: dict[str, Any] = {
    "source": "shop",
    "event_id": "evt_1",
    "type": "order.created",
    "received_at": 1.0,
    "prefix": "webhook",
    "ledger_ttl": 60,
    "state": "queued",
}


@pytest.mark.parametrize(
    "args",
    [
        ("shop", "evt_1", "order.created", b"{}", {}),  # one short
        ("shop", "evt_1", "order.created", b"{}", {}, "yesterday"),  # not a time
        ("shop", "evt_1", "order.created", None, {}, 1.0),  # no bytes
        None,  # a job enqueued without arguments
    ],
)
def test_arguments_that_are_not_an_events_make_the_job_unreadable(args: Any) -> None:
    with pytest.raises(UnreadableJob, match="its arguments are not an event's"):
        EventCall.from_args(args)


def test_the_format_key_an_older_version_wrote_is_read_as_the_payload_format() -> None:
    meta = JobMeta.from_meta({**META, "format": "form"})
    assert meta.payload_format is PayloadFormat.FORM and meta.state is EventStatus.QUEUED
    assert "format" not in meta.extra and "format" not in meta.to_meta()


def test_a_payload_format_this_version_cannot_parse_makes_the_job_unreadable() -> None:
    with pytest.raises(UnreadableJob, match="unknown payload format"):
        JobMeta.from_meta({**META, "payload_format": "xml"})
