"""The `hmac` provider: signature over the raw bytes, body timestamp, event id and type."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from app.errors import InvalidPayload, InvalidSignature, StaleTimestamp
from app.providers.generic import HmacVerifier
from app.settings import SourceConfig
from tests.conftest import sign

NOW = 1_800_000_000.0


def verifier(*secrets: str, tolerance: int = 300) -> HmacVerifier:
    return HmacVerifier(
        SourceConfig("inbound", "hmac", tuple(SecretStr(s) for s in secrets), tolerance, 86400)
    )


def body(**fields: object) -> bytes:
    return json.dumps({"id": "evt_1", "type": "order.created", **fields}).encode()


def test_a_valid_signature_yields_the_event_id_and_type() -> None:
    delivery = verifier("k").verify(body(), {"x-signature-256": sign(body(), "k")}, NOW)
    assert (delivery.event_id, delivery.event_type) == ("evt_1", "order.created")


def test_the_sha256_prefix_is_accepted() -> None:
    headers = {"x-signature-256": "sha256=" + sign(body(), "k")}
    assert verifier("k").verify(body(), headers, NOW).event_id == "evt_1"


def test_a_one_byte_change_is_rejected() -> None:
    signature = sign(body(), "k")
    tampered = body().replace(b"evt_1", b"evt_2")
    with pytest.raises(InvalidSignature):
        verifier("k").verify(tampered, {"x-signature-256": signature}, NOW)


def test_any_configured_secret_verifies_during_rotation() -> None:
    for secret in ("old", "new"):
        headers = {"x-signature-256": sign(body(), secret)}
        assert verifier("old", "new").verify(body(), headers, NOW).event_id == "evt_1"


@pytest.mark.parametrize(
    "value", ["", "   ", "zz", "abc", "sha256=", "sha256=" + "0" * 63, "0" * 66, "é" * 64]
)
def test_missing_or_malformed_signature_headers_are_401(value: str) -> None:
    with pytest.raises(InvalidSignature):
        verifier("k").verify(body(), {"x-signature-256": value}, NOW)


def test_a_request_without_the_header_is_401() -> None:
    with pytest.raises(InvalidSignature):
        verifier("k").verify(body(), {}, NOW)


@pytest.mark.parametrize("offset", [-301, 301])
def test_a_created_timestamp_outside_the_tolerance_is_stale(offset: int) -> None:
    signed = body(created=int(NOW) + offset)
    with pytest.raises(StaleTimestamp):
        verifier("k").verify(signed, {"x-signature-256": sign(signed, "k")}, NOW)


def test_a_created_timestamp_inside_the_tolerance_passes() -> None:
    signed = body(created=int(NOW) - 299)
    delivery = verifier("k").verify(signed, {"x-signature-256": sign(signed, "k")}, NOW)
    assert delivery.event_id == "evt_1"


@pytest.mark.parametrize("created", ["yesterday", True, [1]])
def test_a_non_numeric_created_is_400(created: object) -> None:
    signed = body(created=created)
    with pytest.raises(InvalidPayload):
        verifier("k").verify(signed, {"x-signature-256": sign(signed, "k")}, NOW)


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"type": "x"}',
        b'{"id": ""}',
        b'{"id": null}',
        b'{"id": true}',
        b'{"id": {"a": 1}}',
        json.dumps({"id": "x" * 257}).encode(),
        b'{"id": "a\\nb"}',
    ],
)
def test_bodies_without_a_usable_event_id_are_400(raw: bytes) -> None:
    with pytest.raises(InvalidPayload):
        verifier("k").verify(raw, {"x-signature-256": sign(raw, "k")}, NOW)


def test_an_integer_event_id_is_used_as_text() -> None:
    raw = b'{"id": 12345}'
    assert verifier("k").verify(raw, {"x-signature-256": sign(raw, "k")}, NOW).event_id == "12345"


def test_a_missing_type_leaves_the_type_empty() -> None:
    raw = b'{"id": "e"}'
    assert verifier("k").verify(raw, {"x-signature-256": sign(raw, "k")}, NOW).event_type == ""
