"""The strict parser reads what `json.loads` reads, in every encoding it accepts, and refuses
what it refuses; only what Python adds to JSON is refused besides."""

from __future__ import annotations

import json

import pytest

from app.providers.json_body import strict_json

DOCUMENT = '{"id": "evt_1", "amount": 4.5, "note": "caf\\u00e9 ☕"}'


@pytest.mark.parametrize(
    "text",
    [
        DOCUMENT,
        DOCUMENT.encode(),
        bytearray(DOCUMENT.encode()),
        DOCUMENT.encode("utf-8-sig"),
        DOCUMENT.encode("utf-16"),
        DOCUMENT.encode("utf-16-le"),
        DOCUMENT.encode("utf-32"),
    ],
    ids=["str", "utf8", "bytearray", "utf8-bom", "utf16", "utf16le", "utf32"],
)
def test_reads_every_encoding_json_loads_reads(text: str | bytes | bytearray) -> None:
    assert strict_json(text) == json.loads(text)


@pytest.mark.parametrize(
    "text", ["\ufeff" + DOCUMENT, b"\xff\xfe\x00", b'{"a": 1'], ids=["str-bom", "junk", "cut"]
)
def test_refuses_what_json_loads_refuses(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        strict_json(text)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"t": -Infinity}', '{"t": 1e400}'])
def test_refuses_what_python_adds_to_json(text: str) -> None:
    with pytest.raises(ValueError):
        strict_json(text)


def test_refuses_the_argument_types_json_loads_refuses_with_its_type_error() -> None:
    view = memoryview(DOCUMENT.encode())
    with pytest.raises(TypeError) as theirs:
        json.loads(view)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as ours:
        strict_json(view)  # type: ignore[arg-type]
    assert str(ours.value) == str(theirs.value)
