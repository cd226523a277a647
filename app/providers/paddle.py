"""Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>...]`.

The signed string is `"{ts}:{raw body}"`, HMAC-SHA256 in hex with the endpoint secret
(`pdl_ntfset_...`) used as is; any one `h1` may match. The timestamp must be within the
tolerance both ways (Paddle's SDK allows only 5 s; set REPLAY_TOLERANCE_<NAME> to tighten).
Event id and type are the body's `event_id` and `event_type`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    any_signature_matches,
    check_window,
    event_id_from,
    event_type_from,
    header,
    hmac_sha256,
    key_value_pairs,
    parse_hex,
    parse_json_object,
    parse_timestamp,
)


class PaddleVerifier(Verifier):
    provider = "paddle"

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        pairs = key_value_pairs(header(headers, "paddle-signature"), ";")
        stamps = [value for key, value in pairs if key == "ts"]
        if len(stamps) != 1:
            raise InvalidSignature("Paddle-Signature needs exactly one ts=")
        timestamp = parse_timestamp(stamps[0])
        given = [parse_hex(value) for key, value in pairs if key == "h1"]
        signatures = [sig for sig in given if sig is not None and len(sig) == 32]
        if not signatures:
            raise InvalidSignature("Paddle-Signature has no valid h1 signature")
        signed = f"{timestamp}:".encode() + body
        if not any_signature_matches((hmac_sha256(k, signed) for k in self.keys), signatures):
            raise InvalidSignature("signature does not match")
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        payload = parse_json_object(body)
        return Delivery(
            event_id=event_id_from(payload.get("event_id"), "body 'event_id'"),
            event_type=event_type_from(payload.get("event_type")),
        )
