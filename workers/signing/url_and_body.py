# ruff: noqa: E501 - the table below is quoted whole by the CLI's help
"""Signers of the schemes that sign the URL (Twilio, HubSpot) or carry their signature in
the body (Mailgun, Adyen, Braintree): each the mirror of its verifier in `app/providers/`.

What `data` is for each (None keeps the sample), where the event id goes and which id the
receiver answers with; the type and timestamp are always set where the provider carries
them, over any value `data` holds there. The id is too, unless `data` has its own there
(HubSpot's `eventId`, Mailgun's `id`, Adyen's `pspReference`): that one is sent as given
and is the event id, which an id given must equal (`base.own_id`).

| provider | `data` | event id sent as | answered id | type sent as |
|---|---|---|---|---|
| `twilio` | form fields added to the sample's, or replacing them (`ErrorCode`, `Body`, `To`...) | `I-Twilio-Idempotency-Token`; `MessageSid` derives from it | the id | `MessageStatus`, `SmsStatus` |
| `hubspot` | the event's fields besides `subscriptionType`, `attemptNumber` (`objectId`, `propertyName`, `propertyValue`, `occurredAt`...; its own `eventId`) | `eventId` (a number when it is digits) | `sha256:` digest of the batch | `subscriptionType` |
| `mailgun` | `event-data` besides `event`, `timestamp` (its own `id`) | `event-data.id` | the id | `event-data.event` |
| `adyen` | the `NotificationRequestItem` besides `eventCode`, `additionalData.hmacSignature` (`amount`, `merchantReference`, `success`, `additionalData`...; its own `pspReference`) | `pspReference` | `pspReference:eventCode:success` | `eventCode` |
| `braintree` | the `<subject>`, as an object of XML elements (`{"subscription": {"id": "s1"}}`) | the sample subject's `<id>` (Braintree sends no id) | `sha256:` digest of `bt_payload` | `<kind>` |

HubSpot's and Braintree's ids are digests, so their bodies hold no clock (HubSpot's sample
`occurredAt` and Braintree's `<timestamp>` are `SAMPLE_TIME`): the same event twice is the
same bytes; with `data`, Braintree's event is the data (the same data is the same event,
whatever id is given). Twilio's and Mailgun's ids are not signed; the receiver also claims what is
signed (Twilio's fields, Mailgun's timestamp and token), which differ with the id.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlencode

from app.providers.fields import body_digest
from app.providers.hubspot import hubspot_uri
from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    SigningError,
    b64_hmac,
    header_value,
    hex_hmac,
    object_data,
    own_id,
    require_secret,
)
from workers.signing.braintree_xml import sign_braintree
from workers.signing.envelope import SAMPLE_TIME, derived, derived_number, dumps, iso

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


# --- Twilio ------------------------------------------------------------------------------


def twilio_signature(key: bytes, url: str, fields: list[tuple[str, str]]) -> str:
    """The URL, then each name and value, names sorted (values of one name sorted)."""
    values: dict[str, set[str]] = {}
    for name, value in fields:
        values.setdefault(name, set()).add(value)
    tail = "".join(name + value for name in sorted(values) for value in sorted(values[name]))
    return b64_hmac(key, (url + tail).encode(), "sha1")


def sign_twilio(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)
    token = header_value(event.event_id, "twilio", "event id (I-Twilio-Idempotency-Token)")
    sid = "SM" + derived(event.event_id, 32)
    fields: dict[str, str] = {
        "AccountSid": "AC" + derived("account", 32),
        "ApiVersion": "2010-04-01",
        "From": "+15017122661",
        "MessageSid": sid,
        "SmsSid": sid,
        "To": "+15558675310",
    }
    extra = object_data(event.data if event.data is not None else {}, "twilio", "form fields")
    for name, value in extra.items():
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise SigningError(f"twilio: form field {name!r} must be a string")
        fields[name] = str(value)
    fields["MessageStatus"] = fields["SmsStatus"] = event.event_type
    pairs = list(fields.items())
    headers = {
        **FORM,
        "X-Twilio-Signature": twilio_signature(key, event.url, pairs),
        "I-Twilio-Idempotency-Token": token,
        "X-Home-Region": "us1",
    }
    return SignedRequest(event.url, headers, urlencode(pairs).encode(), token)


# --- HubSpot -----------------------------------------------------------------------------

HUBSPOT_ENVELOPE = ("eventId", "subscriptionType", "attemptNumber")


def hubspot_signature(key: bytes, method: str, url: str, body: bytes, stamp: str) -> str:
    """v3: method + URI (HubSpot's escapes decoded) + body + timestamp (ms), base64."""
    return b64_hmac(key, method.encode() + hubspot_uri(url).encode() + body + stamp.encode())


def sign_hubspot(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)
    sample: dict[str, Any] = {
        "subscriptionId": 4065,
        "portalId": 62515,
        "appId": 1160452,
        "occurredAt": SAMPLE_TIME * 1000,
        "objectId": derived_number(event.event_id),
        "changeSource": "CRM",
    }
    if event.event_type.endswith(".creation"):
        sample["changeFlag"] = "NEW"
    if event.event_type.endswith(".propertyChange"):
        sample.update(propertyName="email", propertyValue="alice@example.com")
    fields = sample if event.data is None else object_data(event.data, "hubspot", "one event")
    event_id: object = event.event_id
    if own_id(event, fields.get("eventId"), "hubspot", "eventId") is not None:
        event_id = fields["eventId"]  # the data's own, as given
    elif event.event_id.isdigit() and str(int(event.event_id)) == event.event_id:
        event_id = int(event.event_id)  # HubSpot's eventId is a number
    item = {
        "eventId": event_id,
        **{k: v for k, v in fields.items() if k not in HUBSPOT_ENVELOPE},
        "subscriptionType": event.event_type,
        "attemptNumber": 0,
    }
    body = dumps([item], "hubspot")
    stamp = str(event.timestamp * 1000)
    headers = {
        **JSON,
        "X-HubSpot-Signature-v3": hubspot_signature(key, "POST", event.url, body, stamp),
        "X-HubSpot-Request-Timestamp": stamp,
    }
    # The receiver's id: the events as parsed, without what a retry changes.
    stable = [{k: v for k, v in e.items() if k != "attemptNumber"} for e in json.loads(body)]
    canonical = json.dumps(stable, sort_keys=True, separators=(",", ":")).encode()
    return SignedRequest(event.url, headers, body, body_digest(canonical))


# --- Mailgun -----------------------------------------------------------------------------


def sign_mailgun(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)
    sample: dict[str, Any] = {
        "log-level": "info",
        "recipient": "alice@example.com",
        "recipient-domain": "example.com",
        "envelope": {"sender": "bob@mg.example.com", "transport": "smtp"},
        "message": {
            "headers": {
                "message-id": derived(event.event_id, 24) + "@mg.example.com",
                "from": "Bob <bob@mg.example.com>",
                "to": "alice@example.com",
                "subject": "Hello",
            },
            "size": 1024,
        },
        "delivery-status": {"code": 250, "message": "OK", "attempt-no": 1},
        "tags": [],
        "user-variables": {},
    }
    fields = sample if event.data is None else object_data(event.data, "mailgun", "event-data")
    own = own_id(event, fields.get("id"), "mailgun", "id")
    event_id = own or event.event_id
    stamp = str(event.timestamp)
    token = hashlib.sha256(f"{event_id}\n{stamp}".encode()).hexdigest()[:50]
    signed = {
        "timestamp": stamp,
        "token": token,
        "signature": hex_hmac(key, (stamp + token).encode()),
    }
    data = {
        "id": fields["id"] if own is not None else event.event_id,
        "timestamp": float(event.timestamp),
        "event": event.event_type,
        **{k: v for k, v in fields.items() if k not in ("id", "timestamp", "event")},
    }
    body = dumps({"signature": signed, "event-data": data}, "mailgun")
    return SignedRequest(event.url, dict(JSON), body, event_id)


# --- Adyen -------------------------------------------------------------------------------

ADYEN_SIGNED = ("originalReference", "merchantAccountCode", "merchantReference")


def _adyen_text(value: object, name: str) -> str:
    """A signed field as Adyen signs it; another JSON type would not verify."""
    if value is None:
        return ""
    if isinstance(value, bool) and name == "success":
        return "true" if value else "false"
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise SigningError(f"adyen: item field {name!r} must be a string or an integer")
    return str(value)


def adyen_signing_string(item: dict[str, Any]) -> str:
    amount = item.get("amount")
    amount = {} if amount is None else amount
    if not isinstance(amount, dict):
        raise SigningError("adyen: item field 'amount' must be an object (value, currency)")
    values = [("pspReference", item.get("pspReference"))]
    values += [(name, item.get(name)) for name in ADYEN_SIGNED]
    values += [("value", amount.get("value")), ("currency", amount.get("currency"))]
    values += [("eventCode", item.get("eventCode")), ("success", item.get("success"))]
    return ":".join(_adyen_text(value, name) for name, value in values)


def sign_adyen(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    require_secret(keys, source)
    try:
        key = bytes.fromhex(keys.secret)
    except ValueError:
        raise SigningError("adyen: the HMAC key is hex, as the Customer Area shows it") from None
    sample: dict[str, Any] = {
        "additionalData": {"authCode": "058705", "cardSummary": "1111", "expiryDate": "03/2030"},
        "amount": {"currency": "EUR", "value": 1000},
        "eventDate": iso(event.timestamp),
        "merchantAccountCode": "YourMerchantAccount",
        "merchantReference": f"order-{derived_number(event.event_id, 6)}",
        "operations": ["CANCEL", "CAPTURE", "REFUND"],
        "paymentMethod": "visa",
        "reason": "058705:1111:03/2030",
        "success": "true",
    }
    fields = sample if event.data is None else object_data(event.data, "adyen", "the item")
    extra = fields.get("additionalData")
    extra = {} if extra is None else object_data(extra, "adyen", "additionalData")
    own = own_id(event, fields.get("pspReference"), "adyen", "pspReference")
    item = {k: v for k, v in fields.items() if k not in ("pspReference", "eventCode")}
    item.update(pspReference=fields["pspReference"] if own is not None else event.event_id)
    item.update(eventCode=event.event_type)
    signature = b64_hmac(key, adyen_signing_string(item).encode())
    item["additionalData"] = {**extra, "hmacSignature": signature}
    body = dumps(
        {"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}, "adyen"
    )
    answered = ":".join(
        _adyen_text(item.get(k), k) for k in ("pspReference", "eventCode", "success")
    )
    return SignedRequest(event.url, dict(JSON), body, answered)


SIGNERS: dict[str, Signer] = {
    "twilio": sign_twilio,
    "hubspot": sign_hubspot,
    "mailgun": sign_mailgun,
    "adyen": sign_adyen,
    "braintree": sign_braintree,
}
