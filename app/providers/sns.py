"""`sns` (AWS SNS over HTTP/S): an RSA signature checked with the certificate it names.

The body (JSON, sent as text/plain) carries `Signature` (base64) over a canonical string:
`Key\\nValue\\n` for `Message, MessageId, Subject (if present), Timestamp, TopicArn, Type` of a
notification, `Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn, Type` of a
(un)subscription confirmation. `SignatureVersion` 1 is RSA-SHA1, 2 RSA-SHA256. The key is
in the X.509 certificate at `SigningCertURL`, which must be
`/SimpleNotificationService-<32 hex>.pem` (no query, no fragment, one spelling) on an
origin of WEBHOOK_FETCH_ALLOW (by default `https://sns.<region>.amazonaws.com`);
certificates are cached. `TopicArn` must match WEBHOOK_TOPICS_<NAME> (comma-separated,
`*` wildcards), so only your topics can post; `Timestamp` must be within the tolerance
(default 1 hour, which covers SNS's default retries). Both are checked before the
certificate is fetched, so a request that would be refused anyway fetches nothing. A
body that repeats a key is a 400: the signature would cover one value, a handler read
another.

A verified `SubscriptionConfirmation` is confirmed by fetching its `SubscribeURL` (an
allowed origin too) and enqueues nothing. Notifications are enqueued under `MessageId`,
typed by `Type`; so are unsubscribe confirmations, for a handler to notice.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature as BadSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from app.errors import InvalidPayload, InvalidSignature
from app.keyfetch import Fetch, KeyFetcher, KeyRefused, split_origin
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    check_window,
    event_id_from,
    pick_headers,
)
from app.providers.fields import parse_iso8601
from app.providers.json_body import parse_json_value
from app.providers.request import Inbound, Reply
from app.sources import ConfigError, SourceConfig

NOTIFICATION = ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
CONFIRMATION = ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type")
SIGNED = {
    "Notification": NOTIFICATION,
    "SubscriptionConfirmation": CONFIRMATION,
    "UnsubscribeConfirmation": CONFIRMATION,
}
HASHES = {"1": hashes.SHA1, "2": hashes.SHA256}
CERTIFICATE_PATH = re.compile(r"/SimpleNotificationService-[0-9a-f]{32}\.pem")
HANDED_ON = ("x-amz-sns-message-type", "x-amz-sns-topic-arn", "x-amz-sns-subscription-arn")
DEFAULT_TOLERANCE = 3600


def string_to_sign(message: dict[str, Any]) -> bytes:
    keys = SIGNED[message["Type"]]
    return "".join(f"{k}\n{message[k]}\n" for k in keys if k in message).encode()


def is_certificate_url(url: str) -> bool:
    """True for `<origin>/SimpleNotificationService-<32 hex>.pem`, spelt one way only.

    AWS's SDKs accept no other path. The URL is also the cache key of the certificate, so
    anything that would name the same file anew is refused: a query or fragment (even
    empty), user info, an upper-case scheme or host, a port written with leading zeros.
    Whether the origin itself is trusted is WEBHOOK_FETCH_ALLOW's to say.
    """
    found = split_origin(url)
    if found is None:
        return False
    parts, origin = found
    return url == origin + parts.path and CERTIFICATE_PATH.fullmatch(parts.path) is not None


def load_certificate_key(pem: bytes) -> rsa.RSAPublicKey:
    key = x509.load_pem_x509_certificate(pem).public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("not an RSA certificate")
    return key


class SnsVerifier(Verifier):
    provider = "sns"
    fetches_keys = True

    def __init__(self, source: SourceConfig, fetcher: KeyFetcher) -> None:
        super().__init__(source)
        self.fetcher = fetcher
        self.tolerance = source.window(DEFAULT_TOLERANCE)
        topics = source.variable("WEBHOOK_TOPICS_")
        self.topics = tuple(t.strip() for t in topics.split(",") if t.strip())
        if not self.topics:
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_TOPICS_')} is not set: list the topic ARNs "
                "this source accepts (arn:aws:sns:REGION:ACCOUNT:TOPIC, '*' allowed)"
            )

    async def check_async(self, request: Inbound) -> Delivery:
        # A repeated key is refused: the signature would be checked over one value (Python
        # keeps the last) while a handler's parser may keep the first.
        message = parse_json_value(request.body, unique_keys=True)
        # Read before the signature is checked: every value is the sender's choice of
        # JSON type, so each is checked to be a string before it is looked up or used.
        kind = message.get("Type") if isinstance(message, dict) else None
        if not isinstance(kind, str) or kind not in SIGNED:
            raise InvalidSignature("not a signed SNS message")
        keys = SIGNED[message["Type"]]
        needed = [k for k in keys if k != "Subject"] + ["Signature", "SigningCertURL"]
        if not all(isinstance(message.get(k), str) for k in needed) or not isinstance(
            message.get("Subject", ""), str
        ):
            raise InvalidSignature("SNS message lacks a signed field")
        version = message.get("SignatureVersion")
        algorithm = HASHES.get(version) if isinstance(version, str) else None
        signature = b64decode(message["Signature"])
        if algorithm is None or not signature:
            raise InvalidSignature("malformed Signature or SignatureVersion")
        certificate_url = message["SigningCertURL"]
        if not is_certificate_url(certificate_url):
            raise InvalidSignature("SigningCertURL is not an SNS certificate's URL")
        # Everything that can be checked without the certificate is, before it is fetched:
        # an unsigned request must not be able to make us fetch what we would then refuse.
        if not any(fnmatch.fnmatchcase(message["TopicArn"], t) for t in self.topics):
            raise InvalidSignature("TopicArn is not one of WEBHOOK_TOPICS")
        sent = int(parse_iso8601(message["Timestamp"]))
        check_window(sent, request.now, self.tolerance, future_too=True)
        try:
            key = await self.fetcher.load(
                certificate_url,
                Fetch(certificate_url),
                load_certificate_key,
                source=self.source.name,
            )
            key.verify(signature, string_to_sign(message), padding.PKCS1v15(), algorithm())
        except (KeyRefused, BadSignature):
            raise InvalidSignature("signature does not match") from None
        if message["Type"] == "SubscriptionConfirmation":
            return await self._confirm(message)
        return Delivery(
            event_id=event_id_from(message["MessageId"], "MessageId"),
            event_type=message["Type"],
            headers=pick_headers(request.headers, HANDED_ON),
        )

    async def _confirm(self, message: dict[str, Any]) -> Delivery:
        try:
            await self.fetcher.fetch(Fetch(message["SubscribeURL"]))
        except KeyRefused:
            raise InvalidPayload("SubscribeURL refused the confirmation") from None
        return Delivery(
            event_id="",
            event_type="SubscriptionConfirmation",
            reply=Reply.json({"status": "subscribed"}),
        )
