"""A refused body is drained before the 413, but never more than DRAIN_BYTES of it: a
sender that streams without end gets its answer, not our bandwidth."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.requests import Request

from app.body import DRAIN_BYTES, read_body
from app.errors import BodyTooLarge

CHUNK = 1024 * 1024


def test_a_body_streamed_without_end_is_refused_after_draining_at_most_the_bound() -> None:
    received: list[int] = []

    async def endless() -> dict[str, Any]:
        received.append(CHUNK)
        return {"type": "http.request", "body": b"x" * CHUNK, "more_body": True}

    # Chunked: no Content-Length, so the limit is found while streaming.
    request = Request({"type": "http", "method": "POST", "headers": []}, endless)
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(request, limit=4096))
    assert DRAIN_BYTES < sum(received) <= DRAIN_BYTES + 2 * CHUNK
