"""`braintree`: form fields `bt_signature` and `bt_payload`.

`bt_signature` is `<public key>|<hex>` pairs joined by `&`; the pair of our public key must
hold the hex HMAC-SHA1 of `bt_payload`, keyed with the SHA-1 digest of the private key
(Braintree's SDK also accepts the payload with one more trailing newline). The key pair is
WEBHOOK_PUBLIC_KEY_<NAME> and WEBHOOK_SECRET_<NAME> (several, comma-separated, pair up in
order). `bt_payload` is base64 of an XML notification, which must be one: a
`<notification>` root (after an optional XML declaration) holding a `<kind>` and a
`<timestamp>`, and nothing after the root. Those are checked with bounded patterns (no XML
parser meets untrusted input); `<kind>` is the type. There is no notification id: the id
is the SHA-256 of the signed payload (with its trailing newline, however it was sent).
Handlers get the form fields and can parse them with Braintree's SDK; a form that repeats
either field is a 400 (a handler would get both).

Handshake: `GET ?bt_challenge=<hex>` is answered `<public key>|<hex HMAC-SHA1 of it>`, as
Braintree's SDK does. That answer is made with the very key deliveries are checked with,
over text the caller chose, so it must never be a delivery's signature. Two independent
reasons make sure it is not:
- The handshake signs only `[a-f0-9]{20,32}`, and a `bt_payload` made only of those
  characters is refused before its signature is even checked.
- A delivery must decode to a notification. Its first byte is XML whitespace or `<`, and
  base64's first character is that byte's top six bits: `C` (tab, newline), `D` (carriage
  return), `I` (space) or `P` (`<`), never a hex digit. And a notification (root, kind,
  timestamp) is at least 67 bytes, 92 base64 characters, beyond any challenge's 32.
So no challenge is a valid payload, whatever the attacker picks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from urllib.parse import parse_qsl

from app.errors import InvalidPayload, InvalidSignature
from app.jobstate import PayloadFormat
from app.providers.base import Delivery, Verifier, event_id_from
from app.providers.fields import body_digest, single_fields
from app.providers.request import Inbound, Reply
from app.providers.signatures import any_signature_matches, hmac_digest
from app.sources import ConfigError, SourceConfig

# Never repeated: the verifier would check one and a handler might read the other.
SIGNED_FIELDS = ("bt_signature", "bt_payload")
PAYLOAD = re.compile(r"[A-Za-z0-9+=/\n]+")
# What the handshake signs (Braintree's SDK: 20 to 32 hex digits), and, of any length,
# what it could ever have signed: no payload may be such text.
CHALLENGE = re.compile(r"[a-f0-9]{20,32}")
CHALLENGE_TEXT = re.compile(r"[a-f0-9]+")
# Every pattern is anchored or bounded, so none backtracks over a large payload.
XML_SPACE = b" \t\r\n"
ROOT = re.compile(
    rb"[ \t\r\n]*(?:<\?xml[^<>]{0,200}\?>[ \t\r\n]*)?<notification(?:[ \t\r\n][^<>]{0,200})?>"
)
ROOT_END = b"</notification>"
KIND = re.compile(rb"<kind>([A-Za-z0-9_]{1,100})</kind>")
TIMESTAMP = re.compile(rb"<timestamp(?:[ \t\r\n][^<>]{0,100})?>[^<>]{1,64}</timestamp>")


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
        fields = single_fields(request.body, SIGNED_FIELDS)
        signature, payload = fields.get("bt_signature", ""), fields.get("bt_payload", "")
        if not signature or not payload or not PAYLOAD.fullmatch(payload):
            raise InvalidSignature("missing or malformed bt_signature or bt_payload")
        if CHALLENGE_TEXT.fullmatch(payload):
            # What our handshake signs for anyone who asks: never a delivery (docstring).
            raise InvalidSignature("bt_payload is a challenge, not a notification")
        signed = self._signed_text(signature, payload)
        return Delivery(
            # The digest of what was signed, not of the field as sent: with and without its
            # trailing newline, one signed notification is one event, not two.
            event_id=event_id_from(body_digest(signed.encode()), "bt_payload"),
            event_type=notification_kind(payload),
            payload_format=PayloadFormat.FORM,
        )

    def _signed_text(self, signature: str, payload: str) -> str:
        """The text `signature` is over, the payload or it plus a newline: the first pair
        sent that matches says which (the event id is its digest)."""
        texts = (payload, payload + "\n")
        # Whole `<public key>|<hex>` pairs are compared, so a digest counts only beside its
        # own key's name (a name holding `|` never matched a pair split at its first `|`).
        expected = [
            [
                f"{pk}|{hex_hmac_sha1(k, text)}".encode()
                for pk, k in self.pairs.items()
                if "|" not in pk
            ]
            for text in texts
        ]
        signed = ""
        for pair in signature.encode().split(b"&"):
            for text, digests in zip(texts, expected, strict=True):
                if any_signature_matches(digests, [pair]) and not signed:
                    signed = text
        if not signed:
            raise InvalidSignature("bt_signature does not match")
        return signed

    def handshake(self, request: Inbound) -> Reply:
        challenge = dict(parse_qsl(request.query)).get("bt_challenge", "")
        if not CHALLENGE.fullmatch(challenge):
            raise InvalidPayload("missing or malformed bt_challenge")
        public, key = next(iter(self.pairs.items()))
        return Reply.text(f"{public}|{hex_hmac_sha1(key, challenge)}")


def hex_hmac_sha1(key: bytes, text: str) -> str:
    return hmac_digest("sha1", key, text.encode()).hex()


def notification_kind(payload: str) -> str:
    """The `<kind>` of the notification `payload` encodes; `InvalidPayload` unless it is
    one: a `<notification>` root, with a kind and a timestamp, and nothing after it."""
    try:
        xml = base64.b64decode(payload)
    except (binascii.Error, ValueError):
        raise InvalidPayload("bt_payload is not base64") from None
    kind = KIND.search(xml)
    if (
        not ROOT.match(xml)
        or not xml.rstrip(XML_SPACE).endswith(ROOT_END)
        or kind is None
        or not TIMESTAMP.search(xml)
    ):
        raise InvalidPayload("bt_payload is not a Braintree notification")
    return kind.group(1).decode()
