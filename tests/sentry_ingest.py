"""A Sentry ingest endpoint on loopback: what the real worker sends, as Sentry would read it.

sentry-sdk posts envelopes to `/api/<project>/envelope/` of the DSN's host: a JSON header
line, then items, each a JSON header line and a payload (`length` bytes when the header
says, else up to the next newline), gzip- or brotli-compressed. Every body is kept as it
arrived, decompressed, for the secret scan; each error event, parsed, for the assertions.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from tests.loopback import posts_served
from tests.processes import wait_until

PROJECT = "42"
KEY = "0123456789abcdef0123456789abcdef"


@dataclass(frozen=True)
class Item:
    type: str
    payload: bytes

    def json(self) -> Any:
        return json.loads(self.payload)


def parse_envelope(body: bytes) -> tuple[dict[str, Any], list[Item]]:
    header_line, _, rest = body.partition(b"\n")
    items = []
    while rest.strip():
        line, _, rest = rest.partition(b"\n")
        item_header = json.loads(line)
        length = item_header.get("length")
        if length is None:
            payload, _, rest = rest.partition(b"\n")
        else:
            payload, rest = rest[:length], rest[length:].removeprefix(b"\n")
        items.append(Item(str(item_header["type"]), payload))
    return json.loads(header_line), items


def decompress(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "br":
        import brotli  # only when the SDK found it installed

        return bytes(brotli.decompress(body))
    assert encoding in ("", "identity"), f"unexpected content-encoding {encoding!r}"
    return body


@dataclass
class Ingest:
    port: int = 0
    bodies: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def dsn(self, key: str = KEY) -> str:
        return f"http://{key}@127.0.0.1:{self.port}/{PROJECT}"

    def take(self, path: str, body: bytes) -> None:
        _, items = parse_envelope(body)
        with self.lock:
            self.paths.append(path)
            self.bodies.append(body)
            self.events += [item.json() for item in items if item.type == "event"]

    def all(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.events)

    def of(self, event_id: str) -> list[dict[str, Any]]:
        """The events of one delivery, in the order of their attempts."""
        found = [e for e in self.all() if e.get("tags", {}).get("webhook.event_id") == event_id]
        return sorted(found, key=lambda e: int(e["tags"]["webhook.attempt"]))

    def wait_for(
        self, check: Callable[[list[dict[str, Any]]], bool], what: str, timeout: float = 30
    ) -> list[dict[str, Any]]:
        wait_until(lambda: check(self.all()), timeout, what)
        return self.all()

    def received(self) -> bytes:
        with self.lock:
            return b"\n".join(self.bodies)


def serve() -> Iterator[Ingest]:
    ingest = Ingest()

    def answer(path: str, headers: Message, body: bytes) -> tuple[bytes, str]:
        ingest.take(path, decompress(body, headers.get("content-encoding", "")))
        return b'{"id":"0"}', "application/json"

    with posts_served(answer) as port:
        ingest.port = port
        yield ingest
