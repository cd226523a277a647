"""Reading the raw request body without ever holding more than the configured limit."""

from __future__ import annotations

from starlette.requests import Request

from app.errors import BodyTooLarge, InvalidPayload


async def read_body(request: Request, limit: int) -> bytes:
    """The exact bytes the sender signed, or `BodyTooLarge` as soon as they exceed `limit`.

    A declared Content-Length over the limit is refused before reading anything; a body
    without one (chunked) is counted as it streams, so a huge body is never buffered whole.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise InvalidPayload("malformed Content-Length header")
        if int(declared) > limit:
            raise BodyTooLarge(f"body larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
