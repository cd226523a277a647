"""Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>...]`.

The signed string is `"{ts}:{raw body}"`, HMAC-SHA256 in hex with the endpoint secret
(`pdl_ntfset_...`) used as is; any one `h1` may match. The timestamp must be within the
tolerance both ways (Paddle's SDK allows only 5 s; set REPLAY_TOLERANCE_<NAME> to tighten).
Event id and type are the body's `event_id` and `event_type`.
"""

from __future__ import annotations

from app.providers.base import TimestampedHexVerifier


class PaddleVerifier(TimestampedHexVerifier):
    provider = "paddle"
    header_name = "Paddle-Signature"
    separator, stamp_key, signature_key, joiner = ";", "ts", "h1", ":"
    future_refused = True
    id_field, type_field = "event_id", "event_type"
