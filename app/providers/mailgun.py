"""`mailgun`: the signature is in the body, over `timestamp + token` only.

JSON webhooks: `{"signature": {"timestamp", "token", "signature"}, "event-data": {...}}`;
legacy webhooks post the same three as form fields. The signature is the hex
HMAC-SHA256 of timestamp and token concatenated, with the HTTP webhook signing key; the
timestamp (unix seconds) must be within the tolerance both ways. Mailgun signs nothing
else: the event data is not covered, which is Mailgun's design (the token is single-use
and the dedupe window keeps the id it arrived with).

The body has to be parsed to find the signature; it is parsed strictly, and only the
three signed strings are read before the check. A JSON body that repeats a key, or a form
that repeats a signed field, is a 400: the check would read one value, a handler another.
The id is `event-data.id` (legacy: the token), the type `event-data.event` (legacy:
`event`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.errors import InvalidPayload, InvalidSignature
from app.jobstate import PayloadFormat
from app.providers.base import (
    Delivery,
    Verifier,
    check_window,
    event_id_from,
    event_type_from,
    parse_hex,
    parse_timestamp,
)
from app.providers.fields import json_path, single_fields
from app.providers.json_body import parse_json_value
from app.providers.signatures import check_hmac

MAX_TOKEN = 256
SIGNED_FIELDS = ("timestamp", "token", "signature")


class MailgunVerifier(Verifier):
    provider = "mailgun"
    # The id is the body's event-data.id, which Mailgun leaves unsigned (the legacy form's
    # id, the token, is signed, but one verifier takes both).
    id_signed = False

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        is_form = headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
        # No signed key may come twice: the check would read one value, a handler another.
        payload: Any = (
            single_fields(body, SIGNED_FIELDS)
            if is_form
            else parse_json_value(body, unique_keys=True)
        )
        signed = payload if is_form else json_path(payload, "signature")
        if not isinstance(signed, dict):
            raise InvalidSignature("no signature object in the body")
        stamp, token, signature = (signed.get(k) for k in ("timestamp", "token", "signature"))
        if not (_short(stamp) and _short(token) and _short(signature)):
            raise InvalidSignature("malformed signature object")
        assert isinstance(stamp, str) and isinstance(token, str) and isinstance(signature, str)
        given = parse_hex(signature)
        if given is None or len(given) != 32:
            raise InvalidSignature("malformed signature")
        timestamp = parse_timestamp(stamp)
        check_hmac(self.keys, (stamp + token).encode(), [given])
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        if is_form:
            return Delivery(
                event_id=event_id_from(token, "form 'token'"),
                event_type=event_type_from(payload.get("event")),
                payload_format=PayloadFormat.FORM,
            )
        # Only the timestamp and the token are signed: they are what a replay repeats.
        data = json_path(payload, "event-data")
        if not isinstance(data, dict):
            raise InvalidPayload("no event-data object")
        return Delivery(
            event_id=event_id_from(data.get("id"), "body 'event-data.id'"),
            event_type=event_type_from(data.get("event")),
            signed=(stamp + token).encode(),
        )


def _short(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_TOKEN
