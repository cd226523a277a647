"""Commands packed by hiredis in C (`app/packing.py`) are redis-py's, byte for byte and error
for error: what each command the product sends looks like on the wire cannot change."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from redis._parsers.encoders import Encoder
from redis.connection import HiredisRespSerializer, PythonRespSerializer

from app import packing
from workers.dev.redis_server import RedisServer


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 7


ARGUMENTS: list[Any] = [
    "plain",
    "é and 😀",
    b"\x00\xffbinary",
    0,
    -42,
    2**70,
    1.5,
    1 / 3,
    -0.0,
    float("inf"),
    float("-inf"),
    1e100,
    Colour.RED,
    Level.HIGH,
    memoryview(b"viewed"),
    bytearray(b"array"),
    "",
    b"",
]


def named(value: Any) -> str:
    """A test id that is the same in every process (pytest-xdist compares them)."""
    if isinstance(value, memoryview):
        return f"memoryview({bytes(value)!r})"
    return "object()" if type(value) is object else repr(value)


def packers(encoding: str = "utf-8") -> tuple[HiredisRespSerializer, HiredisRespSerializer]:
    """redis-py's serializer, and one as `packing.install` makes it pack."""
    encode = Encoder(encoding, "strict", False).encode
    fallback = PythonRespSerializer(6000, encode).pack
    theirs, ours = HiredisRespSerializer(fallback, encode), HiredisRespSerializer(fallback, encode)
    ours.pack = lambda *args: packing._pack(ours, *args)  # type: ignore[method-assign]
    return theirs, ours


def outcome(packer: HiredisRespSerializer, *args: Any) -> bytes | str:
    try:
        return b"".join(bytes(chunk) for chunk in packer.pack(*args))
    except Exception as exc:  # the error, by type and message: it must be the same too
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("value", ARGUMENTS, ids=named)
def test_each_argument_is_packed_to_redis_pys_bytes(value: Any) -> None:
    theirs, ours = packers()
    for command in (("SET", "key", value), (b"HSET", b"key", "field", value)):
        assert outcome(ours, *command) == outcome(theirs, *command)


@pytest.mark.parametrize("value", [True, None, object(), "\ud800"], ids=named)
def test_what_redis_py_refuses_is_refused_with_its_error(value: Any) -> None:
    theirs, ours = packers()
    refused = outcome(theirs, "SET", "key", value)
    assert isinstance(refused, str)
    assert outcome(ours, "SET", "key", value) == refused


def test_a_command_name_with_a_space_and_another_encoding_are_packed_as_redis_py_does() -> None:
    theirs, ours = packers()
    assert outcome(ours, "CLIENT SETNAME", "worker") == outcome(theirs, "CLIENT SETNAME", "worker")
    theirs, ours = packers("latin-1")
    assert (
        outcome(ours, "SET", "key", "é")
        == outcome(theirs, "SET", "key", "é")
        == (b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$1\r\n\xe9\r\n")
    )


def test_every_client_the_product_builds_packs_in_c(redis_server: RedisServer) -> None:
    from app.connection import sync_client
    from app.settings import Settings

    settings = Settings.load(
        _env_file=None, redis_url=redis_server.url, webhook_signing_secret="s" * 32
    )
    client = sync_client(settings)
    assert HiredisRespSerializer.pack is packing._pack
    client.set("packed", "é")
    assert client.get("packed") == "é".encode()
