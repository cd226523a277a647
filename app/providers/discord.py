"""`discord` (interactions endpoint): Ed25519 over `X-Signature-Timestamp` + raw body.

`X-Signature-Ed25519` is the hex signature; WEBHOOK_SECRET_<NAME> is the application's
public key exactly as the Developer Portal shows it (64 hex characters). Discord sends
deliberately bad signatures when the URL is saved and requires a 401 for them. The
timestamp (unix seconds) must be within the tolerance both ways.

A verified PING (type 1) is answered with PONG (`{"type": 1}`) and enqueues nothing.
Other interactions are enqueued under their `id`, typed `application_command`,
`message_component`, `autocomplete` or `modal_submit`, and answered at once with
Discord's deferral (the handler then follows up with the interaction token within 15
minutes): commands and modals "thinking" (type 5), components a deferred update (type 6),
autocomplete no choices.
"""

from __future__ import annotations

from collections.abc import Mapping

from cryptography.exceptions import InvalidSignature as BadSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from app.errors import InvalidPayload, InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    check_window,
    event_id_from,
    header,
    parse_hex,
    parse_timestamp,
)
from app.providers.json_body import parse_json_object
from app.providers.request import Reply
from app.sources import ConfigError, SourceConfig

PING = 1
TYPES = {2: "application_command", 3: "message_component", 4: "autocomplete", 5: "modal_submit"}
DEFERRED = {
    2: Reply.json({"type": 5}),
    3: Reply.json({"type": 6}),
    4: Reply.json({"type": 8, "data": {"choices": []}}),
    5: Reply.json({"type": 5}),
}


def ed25519_keys(source: SourceConfig) -> tuple[Ed25519PublicKey, ...]:
    keys = []
    for secret in source.secrets:
        raw = parse_hex(secret.get_secret_value())
        if raw is None or len(raw) != 32:
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_SECRET_')}: a Discord public key is 64 hex "
                "characters, as the Developer Portal shows it"
            )
        keys.append(Ed25519PublicKey.from_public_bytes(raw))
    return tuple(keys)


class DiscordVerifier(Verifier):
    provider = "discord"

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        self.public_keys = ed25519_keys(source)

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        stamp = header(headers, "x-signature-timestamp")
        signature = parse_hex(header(headers, "x-signature-ed25519"))
        if signature is None or len(signature) != 64:
            raise InvalidSignature("malformed X-Signature-Ed25519 header")
        timestamp = parse_timestamp(stamp)
        message = stamp.encode() + body
        if not any(_valid(key, signature, message) for key in self.public_keys):
            raise InvalidSignature("signature does not match")
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        payload = parse_json_object(body)
        kind = payload.get("type")
        # An integer, checked first: a list is unhashable (`in TYPES` would raise), and
        # `true == 1` would make a boolean a PING.
        if isinstance(kind, bool) or not isinstance(kind, int):
            raise InvalidPayload("unknown interaction type")
        if kind == PING:
            return Delivery(event_id="", event_type="ping", reply=Reply.json({"type": 1}))
        if kind not in TYPES:
            raise InvalidPayload("unknown interaction type")
        return Delivery(
            event_id=event_id_from(payload.get("id"), "body 'id'"),
            event_type=TYPES[kind],
            ack=DEFERRED[kind],
        )


def _valid(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    try:
        key.verify(signature, message)
    except BadSignature:
        return False
    return True
