"""Signers of the asymmetric schemes whose verifiers fetch the key: AWS SNS (a certificate at
the message's `SigningCertURL`) and Plaid (a JWK from its API). What they send is in
`asymmetric.py`'s table."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from app.providers.sns import is_certificate_url, string_to_sign
from app.settings import SourceConfig
from workers.signing.asymmetric_keys import (
    CERT_URL_LINE,
    PEM_BLOCK,
    b64url,
    hex_of,
    json_bytes,
    load_private_key,
    p256_key,
    plaid_key_id,
    wrong_key,
)
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    SigningError,
    header_value,
    own_id,
)
from workers.signing.defaults import DEFAULT_TYPE

# --- AWS SNS ----------------------------------------------------------------------------


def _topic(source: SourceConfig) -> str:
    """An ARN the source accepts: its first WEBHOOK_TOPICS_<NAME> entry, wildcards filled."""
    pattern = next((t.strip() for t in source.variable("WEBHOOK_TOPICS_").split(",")), "")
    if not pattern:
        raise SigningError(
            f"source {source.name!r}: {source.variable_name('WEBHOOK_TOPICS_')} is not set, "
            "so no topic ARN would be accepted"
        )
    topic = pattern.replace("*", "dev").replace("?", "x")
    if not fnmatch.fnmatchcase(topic, pattern):
        raise SigningError(
            f"source {source.name!r}: cannot make a topic ARN out of "
            f"{source.variable_name('WEBHOOK_TOPICS_')}'s first pattern"
        )
    return topic


def _certificate_url(keys: Keys, source: SourceConfig) -> str:
    found = CERT_URL_LINE.search(PEM_BLOCK.sub(b"", keys.private_key))
    url = found.group(1).decode("ascii", "replace") if found else ""
    if not url:
        raise SigningError(
            f"source {source.name!r}: no SigningCertURL for its key: the certificate is served "
            "by the key server of `make run`'s stack, which is not running"
        )
    if not is_certificate_url(url):
        raise SigningError(
            f"source {source.name!r}: SigningCertURL must be "
            "<origin>/SimpleNotificationService-<32 hex>.pem"
        )
    return url


def sign_sns(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = load_private_key(keys, source)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise wrong_key(source, "RSA")
    certificate_url = _certificate_url(keys, source)
    origin = certificate_url[: certificate_url.index("/SimpleNotificationService-")]
    topic = _topic(source)
    kind = event.event_type or DEFAULT_TYPE["sns"]
    if kind == "SubscriptionConfirmation":
        raise SigningError(
            f"source {source.name!r}: a SubscriptionConfirmation makes the receiver call its "
            "SubscribeURL; send a Notification or an UnsubscribeConfirmation"
        )
    subscription = f"{topic}:{uuid.uuid5(uuid.NAMESPACE_URL, topic + '#' + source.name)}"
    # SNS sends the id in the body and in a header: in both as the header carries it.
    message_id = header_value(event.event_id, "sns", "x-amz-sns-message-id")
    if event.data is None:
        message = json_bytes({"id": event.event_id}, source).decode()
    elif isinstance(event.data, str):
        message = event.data
    else:
        message = json_bytes(event.data, source).decode()
    stamp = datetime.fromtimestamp(event.timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    # In the order SNS writes them.
    fields: dict[str, str] = {"Type": "Notification", "MessageId": message_id}
    if kind == "UnsubscribeConfirmation":
        token = hex_of("sns-token", topic, event.event_id, length=64)
        fields |= {
            "Type": kind,
            "Token": token,
            "TopicArn": topic,
            "Message": f"You have chosen to deactivate subscription {subscription}.\n"
            "To cancel this operation and restore the subscription, visit the SubscribeURL "
            "included in this message.",
            "SubscribeURL": f"{origin}/?Action=ConfirmSubscription&TopicArn="
            f"{quote(topic, safe='')}&Token={token}",
        }
    else:
        fields["TopicArn"] = topic
        if kind != "Notification":
            fields["Subject"] = kind
        fields["Message"] = message
    fields |= {"Timestamp": stamp, "SignatureVersion": "2"}
    signature = key.sign(string_to_sign(fields), padding.PKCS1v15(), hashes.SHA256())
    fields["Signature"] = base64.b64encode(signature).decode()
    fields["SigningCertURL"] = certificate_url
    if fields["Type"] == "Notification":
        fields["UnsubscribeURL"] = (
            f"{origin}/?Action=Unsubscribe&SubscriptionArn={quote(subscription, safe='')}"
        )
    headers = {
        "Content-Type": "text/plain; charset=UTF-8",
        "User-Agent": "Amazon Simple Notification Service Agent",
        "x-amz-sns-message-type": fields["Type"],
        "x-amz-sns-message-id": message_id,
        "x-amz-sns-topic-arn": topic,
        "x-amz-sns-subscription-arn": subscription,
    }
    return SignedRequest(event.url, headers, json_bytes(fields, source), message_id)


# --- Plaid ------------------------------------------------------------------------------


def _plaid_body(source: SourceConfig, event: EventToSign) -> dict[str, Any]:
    kind = event.event_type or DEFAULT_TYPE["plaid"]
    webhook_type, dot, webhook_code = kind.partition(".")
    if not (webhook_type and dot and webhook_code):
        raise SigningError(
            f"source {source.name!r}: a Plaid type is <webhook_type>.<webhook_code> "
            f"(TRANSACTIONS.SYNC_UPDATES_AVAILABLE), got {kind!r}"
        )
    named = {"webhook_type": webhook_type, "webhook_code": webhook_code}
    if event.data is not None:
        if not isinstance(event.data, dict):
            raise SigningError(f"source {source.name!r}: a Plaid body is a JSON object")
        given = {**named, "item_id": event.event_id, **event.data}
        if own_id(event, event.data.get("item_id"), "plaid", "item_id") is None:
            given["item_id"] = event.event_id  # over a null
        return given
    body: dict[str, Any] = {**named, "item_id": event.event_id}
    if kind == "TRANSACTIONS.SYNC_UPDATES_AVAILABLE":
        body |= {"initial_update_complete": True, "historical_update_complete": True}
    body["environment"] = "sandbox"
    return body


def sign_plaid(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = p256_key(keys, source)
    body = json_bytes(_plaid_body(source, event), source)
    head = {"alg": "ES256", "kid": plaid_key_id(key.public_key()), "typ": "JWT"}
    claims = {"iat": event.timestamp, "request_body_sha256": hashlib.sha256(body).hexdigest()}
    signed = f"{b64url(json_bytes(head, source))}.{b64url(json_bytes(claims, source))}"
    r, s = decode_dss_signature(key.sign(signed.encode(), ec.ECDSA(hashes.SHA256())))
    token = f"{signed}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
    headers = {"Content-Type": "application/json", "Plaid-Verification": token}
    return SignedRequest(event.url, headers, body, "sha256:" + hashlib.sha256(body).hexdigest())
