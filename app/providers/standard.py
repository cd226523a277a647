"""Standard Webhooks (Svix and others): `webhook-id`, `webhook-timestamp`, `webhook-signature`.

Svix sends the same headers as `svix-id`, `svix-timestamp`, `svix-signature`. The signed
string is `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256 in base64; the header holds
space-separated `v1,<base64>` signatures, any one of which may match. The secret is
`whsec_<base64>`: the prefix is stripped and the rest base64-decoded. The timestamp must be
within the tolerance both ways. The event id is `webhook-id`; the type the body's `type`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    check_hmac,
    check_window,
    event_id_from,
    event_type_from,
    parse_timestamp,
)
from app.providers.json_body import parse_json_object
from app.providers.recipe import decode_secret
from app.providers.recipe_spec import SecretEncoding
from app.sources import ConfigError, SourceConfig, env_suffix

PREFIX = "whsec_"


def _headers(headers: Mapping[str, str]) -> tuple[str, str, str]:
    for family in ("webhook", "svix"):
        values = tuple(
            headers.get(f"{family}-{part}", "").strip() for part in ("id", "timestamp", "signature")
        )
        if all(values):
            return values  # type: ignore[return-value]
    raise InvalidSignature("missing webhook-id, webhook-timestamp or webhook-signature header")


class StandardVerifier(Verifier):
    provider = "standard"

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        keys = []
        for secret in source.secrets:
            text = secret.get_secret_value()
            # Padded or not: the official library accepts both, so must we.
            key = decode_secret(text, SecretEncoding.WHSEC)
            if not key:
                raise ConfigError(
                    f"WEBHOOK_SECRET_{env_suffix(source.name)}: a Standard Webhooks secret is "
                    f"'{PREFIX}' followed by base64"
                )
            keys.append(key)
        self.keys = tuple(keys)

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        message_id, stamp, signature_header = _headers(headers)
        timestamp = parse_timestamp(stamp)
        given = []
        for item in signature_header.split():
            version, _, encoded = item.partition(",")
            signature = b64decode(encoded) if version == "v1" else None
            if signature is not None and len(signature) == 32:
                given.append(signature)
        if not given:
            raise InvalidSignature("webhook-signature has no valid v1 signature")
        signed = f"{message_id}.{timestamp}.".encode() + body
        check_hmac(self.keys, signed, given)
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        payload = parse_json_object(body)
        return Delivery(
            event_id=event_id_from(message_id, "webhook-id"),
            event_type=event_type_from(payload.get("type")),
            headers={"webhook-id": message_id, "webhook-timestamp": stamp},
        )
