"""`twilio`: `X-Twilio-Signature: <base64>` over the URL Twilio called.

Form posts (Voice, Messaging): the URL, then each form field's name and value, the names
sorted, the values of a repeated name sorted, all concatenated; HMAC-SHA1 with the Auth
Token (HMAC-SHA256 when `X-Twilio-Webhooks-Signature-Settings` says so). JSON posts: the
URL alone is signed and carries `bodySHA256`, the hex SHA-256 of the body, checked too.
Twilio signs the URL sometimes with and sometimes without the port, so both are tried, as
Twilio's own `RequestValidator` does. Behind a proxy set WEBHOOK_PUBLIC_URL.

No event id is sent: `I-Twilio-Idempotency-Token` when present, else the body's SHA-256.
The type is the form's `MessageStatus`, `SmsStatus`, `CallStatus` or `EventType`. The
answer to a form post is empty TwiML, which Voice and Messaging expect.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from app.errors import InvalidSignature
from app.jobstate import PayloadFormat
from app.providers.base import Delivery, Verifier, b64decode, event_id_from, pick_headers
from app.providers.fields import body_digest, parse_form
from app.providers.json_body import parse_json_value
from app.providers.request import Inbound, Reply
from app.providers.signatures import matching_key

TYPE_FIELDS = ("MessageStatus", "SmsStatus", "CallStatus", "EventType")
HANDED_ON = ("i-twilio-idempotency-token", "x-home-region", "x-twilio-webhooks-signature-settings")
TWIML = Reply(b'<?xml version="1.0" encoding="UTF-8"?><Response/>', "text/xml")
DEFAULT_PORTS = {"https": 443, "http": 80}


def url_variants(url: str) -> list[str]:
    """The URL with and without its scheme's default port."""
    parts = urlsplit(url)
    default = DEFAULT_PORTS.get(parts.scheme)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        return [url]
    if default is None or "@" in parts.netloc:
        return [url]
    if port is None:
        other = parts._replace(netloc=f"{parts.netloc}:{default}")
    elif port == default:
        other = parts._replace(netloc=host if ":" not in host else f"[{host}]")
    else:
        return [url]
    return [url, urlunsplit(other)]


def signed_params(pairs: list[tuple[str, str]]) -> str:
    """Names sorted, values of one name sorted; identical pairs once (Twilio's SDK)."""
    values: dict[str, set[str]] = {}
    for name, value in pairs:
        values.setdefault(name, set()).add(value)
    return "".join(name + value for name in sorted(values) for value in sorted(values[name]))


class TwilioVerifier(Verifier):
    provider = "twilio"
    signs_url = True
    # The id is the I-Twilio-Idempotency-Token header, unsigned; without it, the SHA-256 of
    # the raw form, whose fields can be reordered or re-encoded under the same signature.
    id_signed = False

    def check(self, request: Inbound) -> Delivery:
        given = b64decode(request.headers.get("x-twilio-signature", "").strip())
        settings = request.headers.get("x-twilio-webhooks-signature-settings", "")
        algorithm = "sha256" if "algorithm=HMAC_SHA256" in settings else "sha1"
        if given is None or len(given) != hashlib.new(algorithm).digest_size:
            raise InvalidSignature("missing or malformed X-Twilio-Signature header")
        is_json = request.headers.get("content-type", "").startswith("application/json")
        pairs = [] if is_json else parse_form(request.body)
        tail = signed_params(pairs).encode()
        messages = [url.encode() + tail for url in url_variants(request.url)]
        matched = False
        for message in messages:
            try:
                matching_key(algorithm, self.keys, message, [given])
                matched = True
            except InvalidSignature:
                pass
        if not matched:
            raise InvalidSignature("signature does not match")
        if is_json:
            self._check_body_hash(request)
            parse_json_value(request.body)
        fields = dict(pairs)
        token = request.headers.get("i-twilio-idempotency-token", "").strip()
        return Delivery(
            event_id=event_id_from(token or body_digest(request.body), "idempotency token"),
            event_type=next((fields[f] for f in TYPE_FIELDS if fields.get(f)), ""),
            headers=pick_headers(request.headers, HANDED_ON),
            payload_format=PayloadFormat.JSON if is_json else PayloadFormat.FORM,
            ack=None if is_json else TWIML,
            # The fields as signed (sorted), not as sent: a reordered form is the same event.
            signed=None if is_json else tail,
        )

    @staticmethod
    def _check_body_hash(request: Inbound) -> None:
        declared = dict(parse_qsl(request.query)).get("bodySHA256", "")
        actual = hashlib.sha256(request.body).hexdigest()
        if not hmac.compare_digest(declared.lower().encode(), actual.encode()):
            raise InvalidSignature("bodySHA256 does not match the body")
