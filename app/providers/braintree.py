"""`braintree`: form fields `bt_signature` and `bt_payload`.

`bt_signature` is `<public key>|<hex>` pairs joined by `&`; the pair of our public key must
hold the hex HMAC-SHA1 of `bt_payload`, keyed with the SHA-1 digest of the private key
(Braintree's SDK also accepts the payload with one more trailing newline). The key pair is
WEBHOOK_PUBLIC_KEY_<NAME> and WEBHOOK_SECRET_<NAME> (several, comma-separated, pair up in
order). `bt_payload` is base64 of an XML notification; its `<kind>` is the type, read with
a pattern (no XML parser meets untrusted input). There is no notification id: the id is
the SHA-256 of the payload. Handlers get the form fields and can parse them with
Braintree's SDK.

Handshake: `GET ?bt_challenge=<hex>` is answered `<public key>|<hex HMAC-SHA1 of it>`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from urllib.parse import parse_qsl

from app.errors import InvalidPayload, InvalidSignature
from app.jobstate import PayloadFormat
from app.providers.base import Delivery, Verifier, event_id_from
from app.providers.fields import body_digest, parse_form
from app.providers.request import Inbound, Reply
from app.settings import ConfigError, SourceConfig

PAYLOAD = re.compile(r"[A-Za-z0-9+=/\n]+")
KIND = re.compile(rb"<kind>([A-Za-z0-9_]{1,100})</kind>")
CHALLENGE = re.compile(r"[a-f0-9]{20,32}")


class BraintreeVerifier(Verifier):
    provider = "braintree"

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        variable = source.variable_name("WEBHOOK_PUBLIC_KEY_")
        public = [p.strip() for p in source.variable("WEBHOOK_PUBLIC_KEY_").split(",") if p.strip()]
        if len(public) != len(source.secrets):
            raise ConfigError(
                f"{variable} must list one public key per private key in "
                f"{source.variable_name('WEBHOOK_SECRET_')}"
            )
        self.pairs = {
            # Braintree's scheme: the HMAC key is the SHA-1 digest of the private key.
            pk: hashlib.sha1(sk.get_secret_value().encode()).digest()  # noqa: S324
            for pk, sk in zip(public, source.secrets, strict=True)
        }

    def check(self, request: Inbound) -> Delivery:
        fields = dict(parse_form(request.body))
        signature, payload = fields.get("bt_signature", ""), fields.get("bt_payload", "")
        if not signature or not payload or not PAYLOAD.fullmatch(payload):
            raise InvalidSignature("missing or malformed bt_signature or bt_payload")
        matched = False
        for pair in signature.split("&"):
            public, _, digest = pair.partition("|")
            key = self.pairs.get(public)
            if key is None:
                continue
            for candidate in (payload, payload + "\n"):
                expected = hmac.new(key, candidate.encode(), hashlib.sha1).hexdigest()
                matched |= hmac.compare_digest(expected.encode(), digest.encode())
        if not matched:
            raise InvalidSignature("bt_signature does not match")
        try:
            xml = base64.b64decode(payload)
        except (binascii.Error, ValueError):
            raise InvalidPayload("bt_payload is not base64") from None
        kind = KIND.search(xml)
        return Delivery(
            event_id=event_id_from(body_digest(payload.encode()), "bt_payload"),
            event_type=kind.group(1).decode() if kind else "",
            payload_format=PayloadFormat.FORM,
        )

    def handshake(self, request: Inbound) -> Reply:
        challenge = dict(parse_qsl(request.query)).get("bt_challenge", "")
        if not CHALLENGE.fullmatch(challenge):
            raise InvalidPayload("missing or malformed bt_challenge")
        public, key = next(iter(self.pairs.items()))
        digest = hmac.new(key, challenge.encode(), hashlib.sha1).hexdigest()
        return Reply.text(f"{public}|{digest}")
