"""Raw-socket senders, as an attacker (or a clumsy client) writes to the receiver: slowly,
in pieces, or on one keep-alive connection."""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

from tests.conftest import event_body, sign

# Longer than any deadline the tests set, far shorter than the pytest timeout: a sender
# still connected after this long was never cut.
GIVE_UP = 20.0


@dataclass
class Ending:
    """How a slow sender's connection ended."""

    closed_by_server: bool
    answer: bytes  # what the server wrote before it closed (or before the sender gave up)


def drip(sock: socket.socket, first: bytes, piece: bytes = b"", every: float = 0.2) -> Ending:
    """Send `first`, then `piece` every `every` seconds (nothing, with an empty piece: a
    silent connection), until the server closes the connection or GIVE_UP passes."""
    answer = b""
    with sock:
        stop = time.monotonic() + GIVE_UP
        try:
            if first:
                sock.sendall(first)
            while time.monotonic() < stop:
                readable, _, _ = select.select([sock], [], [], every)
                if readable:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return Ending(True, answer)
                    answer += chunk
                elif piece:
                    sock.sendall(piece)
        except (ConnectionResetError, BrokenPipeError):
            return Ending(True, answer)
    return Ending(False, answer)


def signed_request(event_id: str, keep_alive: bool = True, **extra: object) -> bytes:
    """A whole signed delivery of source `inbound`, head and body."""
    body = event_body(event_id, **extra)
    close = "" if keep_alive else "Connection: close\r\n"
    return (
        "POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nX-Signature-256: {sign(body)}\r\n{close}\r\n"
    ).encode() + body


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One response (status, body) off a connection that stays open: by its Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a whole response: {data[:200]!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the middle of a response body")
        body += chunk
    return int(lines[0].split(b" ", 2)[1]), body[:length]
