"""`hmac`: this project's own scheme (for senders of your own), as the README shows it.

`X-Signature-256: <hex>` (an optional `sha256=` prefix is accepted) is the HMAC-SHA256 of
the raw body. The event id is the body's `id`, its type the body's `type`; a body `created`
(unix seconds), when present, must be within the replay tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    check_body_timestamp,
    event_id_from,
    event_type_from,
    header,
    parse_hex,
)
from app.providers.json_body import parse_json_object
from app.providers.signatures import check_hmac

SIGNATURE_HEADER = "x-signature-256"


class HmacVerifier(Verifier):
    provider = "hmac"

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        value = header(headers, SIGNATURE_HEADER)
        if value[:7].lower() == "sha256=":
            value = value[7:]
        given = parse_hex(value)
        if given is None or len(given) != 32:
            raise InvalidSignature("malformed X-Signature-256 header")
        check_hmac(self.keys, body, [given])
        payload = parse_json_object(body)
        check_body_timestamp(payload, self.source.tolerance, now)
        return Delivery(
            event_id=event_id_from(payload.get("id"), "body 'id'"),
            event_type=event_type_from(payload.get("type")),
        )
