"""Reading the raw request body without ever holding more than the configured limit."""

from __future__ import annotations

import asyncio
import sys

from starlette.requests import Request

from app.errors import BodyTooLarge, InvalidPayload

# After refusing a body, read and discard up to this much more of it (for at most this
# long, and while it keeps coming) before answering. Many clients write the whole body
# before they read, and a server that closes on unread input makes the kernel send a reset:
# the client then sees a broken connection instead of the 413, and retries what can never
# succeed. A client that pauses is waiting for the answer: it gets it then.
DRAIN_BYTES = 32 * 1024 * 1024
DRAIN_SECONDS = 10.0
DRAIN_IDLE_SECONDS = 0.5
MAX_LENGTH_DIGITS = 18


async def read_body(request: Request, limit: int) -> bytes:
    """The exact bytes the sender signed, or `BodyTooLarge` as soon as they exceed `limit`.

    A declared Content-Length over the limit is refused before reading anything; a body
    without one (chunked) is counted as it streams, so a huge body is never buffered whole.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        value = declared.strip()
        # isascii: `isdigit` is also true of '²' (a Latin-1 header byte), which int() refuses.
        if not (value.isascii() and value.isdigit()):
            raise InvalidPayload("malformed Content-Length header")
        # int() also refuses over 4300 digits; a length of 19 digits is past any limit.
        size = int(value) if len(value) <= MAX_LENGTH_DIGITS else sys.maxsize
        if size > limit:
            await _discard_rest(request, size)
            raise BodyTooLarge(f"body larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            await _discard_rest(request, None)
            raise BodyTooLarge(f"body larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _discard_rest(request: Request, declared: int | None) -> None:
    """Read what the client is still sending, without keeping it, within a bound."""
    if "100-continue" in request.headers.get("expect", "").lower():
        return  # it waits for our answer before sending: reading would invite the body
    if declared is not None and declared > DRAIN_BYTES:
        return  # too much to swallow: the client gets a reset rather than our bandwidth
    discarded = 0
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            while discarded <= DRAIN_BYTES:
                message = await asyncio.wait_for(request.receive(), DRAIN_IDLE_SECONDS)
                discarded += len(message.get("body", b""))
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
    except TimeoutError:
        return
