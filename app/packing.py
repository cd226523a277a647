"""Redis commands packed in C, to the bytes redis-py packs.

redis-py's hiredis serializer (`redis.connection.HiredisRespSerializer.pack`, which its
asyncio connections use too) encodes each argument in Python (its `Encoder`: a chain of
isinstance checks and an encode per argument) and then hands them to
`hiredis.pack_command`, which encodes str (UTF-8), int, float and bytes itself, to the same
bytes. Profiled, that loop was a quarter of a worker's CPU per settled event
(docs/benchmarks.md, "Where the drain's time goes"). `install` lets hiredis take the
arguments as they are, for a serializer whose encoder is redis-py's default (UTF-8,
strict): what hiredis refuses (a bool, a bytearray, an IntEnum: TypeError) and a command
name holding a space go redis-py's way, with its errors, so nothing sent or raised differs
(pinned by tests/test_packing.py against redis-py's own packer). A redis-py internal:
named in docs/internals.md.
"""

from __future__ import annotations

from typing import Any

import hiredis  # redis[hiredis]: a dependency of ours
from redis.connection import HiredisRespSerializer
from redis.utils import HIREDIS_AVAILABLE

_ORIGINAL = HiredisRespSerializer.pack


def _default_encoding(encode: Any) -> bool:
    encoder = getattr(encode, "__self__", None)
    return (
        getattr(encoder, "encoding", None) in ("utf-8", "utf8")
        and getattr(encoder, "encoding_errors", None) == "strict"
    )


def _pack(self: HiredisRespSerializer, *args: Any) -> list[bytes]:
    fast = self.__dict__.get("_webhooks_fast")
    if fast is None:
        fast = self.__dict__["_webhooks_fast"] = _default_encoding(self._encode)
    name = args[0]
    # redis-py splits a command name on its spaces ("CLIENT SETNAME"): left to it.
    plain = (" " not in name) if type(name) is str else (type(name) is bytes and b" " not in name)
    if fast and plain:
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            pass  # what redis-py encodes itself, or refuses with its own DataError
    packed: list[bytes] = _ORIGINAL(self, *args)
    return packed


def install() -> None:
    """From now on, in this process (idempotent; nothing without hiredis)."""
    if HIREDIS_AVAILABLE and HiredisRespSerializer.pack is _ORIGINAL:
        HiredisRespSerializer.pack = _pack  # type: ignore[method-assign]
