"""Signers of the header-HMAC schemes that send no event id: Meta, Zoom, Dropbox and Xero.
What `event.data` replaces for each: the table in `header_hmac`.

The receiver's id for them is the body's digest (`sha256:` + hex), so a body here is a
function of the event id, type and data alone, with no clock in it: the same event id is
the same body, a duplicate; the sample's own ids (a WhatsApp message id, a meeting UUID,
an account, Xero's `entropy`) are derived from the event id, so another id is another
event. Times a provider puts in such bodies (WhatsApp's message `timestamp`, Zoom's
`event_ts`, Xero's `eventDateUtc`) are left out: give them in the data where a handler
reads them.
"""

from __future__ import annotations

import string
from typing import Any

from app.providers.fields import body_digest
from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    b64_hmac,
    event_object,
    hex_hmac,
    require_secret,
)
from workers.signing.header_hmac_git import hub_signatures
from workers.signing.hmac_envelope import (
    ALPHANUMERIC,
    URL_SAFE,
    compact,
    constant_type,
    hex_id,
    number,
    spaced,
    token,
    type_or,
    uuid_id,
)


def zoom_signature(key: bytes, timestamp: int, body: bytes) -> str:
    return "v0=" + hex_hmac(key, f"v0:{timestamp}:".encode() + body)


def signed(event: EventToSign, headers: dict[str, str], body: bytes) -> SignedRequest:
    return SignedRequest(event.url, headers, body, body_digest(body))


# --- Meta (WhatsApp Cloud API, Messenger pages, Instagram) -----------------------------------

META_ENTRIES = {
    "whatsapp_business_account": "109876543210987",  # the WhatsApp Business Account
    "page": "104512398765432",
    "instagram": "17841405822304914",
}


def meta_change(event: EventToSign, kind: str) -> tuple[str, dict[str, Any]]:
    """The field and the value of the entry's first change, for the body's `object`."""
    eid = event.event_id
    if kind == "whatsapp_business_account":
        message = {
            "from": "15551234567",
            "id": "wamid." + token(eid, "meta-wamid", 48, ALPHANUMERIC) + "=",
            "type": "text",
            "text": {"body": "Hello!"},
        }
        return "messages", {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550001234", "phone_number_id": "1065403522"},
            "contacts": [{"profile": {"name": "Jane Doe"}, "wa_id": "15551234567"}],
            "messages": [message],
        }
    if kind == "page":
        post = f"{META_ENTRIES['page']}_{number(eid, 'meta-post', 15)}"
        who = {"id": "5012345678901234", "name": "Jane Doe"}
        return "feed", {"item": "status", "verb": "add", "post_id": post, "from": who}
    if kind == "instagram":
        who = {"id": "17841400000000001", "username": "jane.doe"}
        comment = {"id": str(number(eid, "meta-comment", 17)), "text": "Love it!", "from": who}
        return "comments", {**comment, "media": {"id": "17900000000000001"}}
    return "update", {"id": str(number(eid, "meta-id", 15))}


def sign_meta(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)  # the app secret
    kind = type_or(event, "meta")  # the body's `object`
    data = event_object(event, "meta", "entry[0].changes[0].value")
    field, value = meta_change(event, kind)
    entry = META_ENTRIES.get(kind) or str(number(kind, "meta-entry", 15))
    change = {"value": value if data is None else data, "field": field}
    body = compact({"object": kind, "entry": [{"id": entry, "changes": [change]}]})
    headers = {"Content-Type": "application/json", "User-Agent": "facebookexternalua"}
    return signed(event, {**headers, **hub_signatures(key, body)}, body)


# --- Zoom ------------------------------------------------------------------------------------

ZOOM_ACCOUNT, ZOOM_HOST = "Xq4vR2tLS8uNw3bYpE1kZg", "hT7mW0aQSy6vKz2LrB9xcQ"
BASE64 = ALPHANUMERIC + "+/"


def zoom_object(event: EventToSign, kind: str) -> dict[str, Any]:
    eid = event.event_id
    ident = str(number(eid, "zoom-meeting", 11))
    if kind.startswith(("meeting.", "webinar.")):
        meeting = {
            "uuid": token(eid, "zoom-uuid", 22, BASE64) + "==",  # this instance of it
            "id": ident,
            "host_id": ZOOM_HOST,
            "topic": "Weekly sync",
            "type": 2,
            "duration": 30,
            "timezone": "UTC",
        }
        if "participant" in kind:
            who = {"user_id": "16778240", "user_name": "Jane Doe", "email": "jane@example.com"}
            meeting["participant"] = {**who, "id": token(eid, "zoom-participant", 22)}
        return meeting
    if kind.startswith("user."):
        user = {"id": token(eid, "zoom-user", 22), "email": "jane@example.com"}
        return {**user, "first_name": "Jane", "last_name": "Doe", "type": 1}
    return {"id": ident}


def sign_zoom(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)  # the app's Secret Token
    kind = type_or(event, "zoom")
    payload: dict[str, Any]
    if kind == "endpoint.url_validation":  # Zoom's URL check, answered with its token
        data = event_object(event, "zoom", "payload")
        plain = {"plainToken": token(event.event_id, "zoom-plain", 22, URL_SAFE), **(data or {})}
        payload = {"payload": plain, "event_ts": event.timestamp * 1000, "event": kind}
    else:
        data = event_object(event, "zoom", "payload.object")
        obj = zoom_object(event, kind) if data is None else data
        payload = {"event": kind, "payload": {"account_id": ZOOM_ACCOUNT, "object": obj}}
    body = compact(payload)
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": "Zoom Marketplace/1.0a",
        "x-zm-request-timestamp": str(event.timestamp),
        "x-zm-signature": zoom_signature(key, event.timestamp, body),
        "x-zm-trackingid": "v=2.0;clid=aw1;rid=WEB_" + hex_id(event.event_id, "zoom", 32),
    }
    if kind == "endpoint.url_validation":
        return SignedRequest(event.url, headers, body, "")  # answered, nothing queued
    return signed(event, headers, body)


# --- Dropbox ---------------------------------------------------------------------------------


def sign_dropbox(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)  # the app secret
    constant_type(event, "dropbox", "notification")
    data = event_object(event, "dropbox", "the notification")
    if data is None:  # "these accounts changed": one, derived from the event id
        account = "dbid:AA" + token(event.event_id, "dropbox-account", 38, URL_SAFE)
        users = [number(event.event_id, "dropbox-user", 9)]
        data = {"list_folder": {"accounts": [account]}, "delta": {"users": users}}
    body = spaced(data)  # Dropbox writes `, ` and `: `
    headers = {"Content-Type": "application/json", "User-Agent": "DropboxWebhooks/1.0"}
    return signed(event, {**headers, "X-Dropbox-Signature": hex_hmac(key, body)}, body)


# --- Xero ------------------------------------------------------------------------------------

XERO_TENANT = "3c9e1d2a-7b4f-4e8a-9c61-5d0f2b8e7a14"


def sign_xero(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)  # the webhooks key as Xero shows it, not decoded
    constant_type(event, "xero", "events")
    data = event_object(event, "xero", "events[0]")
    if data is None:
        invoice = uuid_id(event.event_id, "xero-invoice")
        data = {
            "resourceUrl": f"https://api.xero.com/api.xro/2.0/Invoices/{invoice}",
            "resourceId": invoice,
            "eventType": "UPDATE",
            "eventCategory": "INVOICE",
            "tenantId": XERO_TENANT,
            "tenantType": "ORGANISATION",
        }
    sequence = number(event.event_id, "xero-sequence", 6)
    payload = {
        "events": [data],
        "firstEventSequence": sequence,
        "lastEventSequence": sequence,
        # Xero's own way to make every body unique: here, derived from the event id.
        "entropy": token(event.event_id, "xero-entropy", 20, string.ascii_uppercase),
    }
    body = compact(payload)
    headers = {"Content-Type": "application/json; charset=utf-8"}
    return signed(event, {**headers, "x-xero-signature": b64_hmac(key, body)}, body)


SIGNERS: dict[str, Signer] = {
    "meta": sign_meta,
    "zoom": sign_zoom,
    "dropbox": sign_dropbox,
    "xero": sign_xero,
}
