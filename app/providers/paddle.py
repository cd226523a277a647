"""Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>...]`.

The signed string is `"{ts}:{raw body}"`, HMAC-SHA256 in hex with the endpoint secret
(`pdl_ntfset_...`) used as is; any one `h1` may match. The timestamp must be within the
tolerance both ways (Paddle's SDK allows only 5 s; set REPLAY_TOLERANCE_<NAME> to tighten).
Event id and type are the body's `event_id` and `event_type`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.providers.base import (
    Delivery,
    Verifier,
    check_hmac,
    check_window,
    event_id_from,
    event_type_from,
    header,
    parse_json_object,
    timestamped_signatures,
)


class PaddleVerifier(Verifier):
    provider = "paddle"

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        timestamp, signatures = timestamped_signatures(
            header(headers, "paddle-signature"), ";", "ts", "h1", "Paddle-Signature"
        )
        signed = f"{timestamp}:".encode() + body
        check_hmac(self.keys, signed, signatures)
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        payload = parse_json_object(body)
        return Delivery(
            event_id=event_id_from(payload.get("event_id"), "body 'event_id'"),
            event_type=event_type_from(payload.get("event_type")),
        )
