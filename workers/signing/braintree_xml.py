"""Braintree's signer (see `url_and_body.py` for what `data` is): `bt_signature` and
`bt_payload`, the base64 of an XML `<notification>` with its `<timestamp>`, `<kind>` and
`<subject>`, signed with HMAC-SHA1 keyed with the SHA-1 digest of the private key.

The subject is written as Braintree's own XML is: an element per key, `type="integer"`,
`type="boolean"`, `nil="true"` and `type="array"` (items are objects of one key, the
item's element), text escaped. Braintree sends no event id: the sample subject carries the
event id as its `<id>`, and the id answered is the digest of the payload, which holds no
clock (its `<timestamp>` is `SAMPLE_TIME`), so the same event twice is a duplicate.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any
from urllib.parse import urlencode
from xml.sax.saxutils import escape

from app.providers.fields import body_digest
from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    SigningError,
    hex_hmac,
    object_data,
    require_secret,
)
from workers.signing.envelope import SAMPLE_TIME, iso

FORM = {"Content-Type": "application/x-www-form-urlencoded"}

KIND = re.compile(r"[A-Za-z0-9_]{1,100}")
XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
# The subject's element for each family of kinds (Braintree's SDK reads these).
SUBJECTS = ("merchant_account", "partner_merchant", "local_payment", "subscription")


def _xml(name: str, value: Any) -> str:
    if not XML_NAME.fullmatch(name):
        raise SigningError(f"braintree: {name!r} cannot be an XML element name")
    if value is None:
        return f'<{name} nil="true"/>'
    if isinstance(value, bool):
        return f'<{name} type="boolean">{"true" if value else "false"}</{name}>'
    if isinstance(value, int):
        return f'<{name} type="integer">{value}</{name}>'
    if isinstance(value, str | float):
        return f"<{name}>{escape(str(value))}</{name}>"
    if isinstance(value, dict):
        return f"<{name}>" + "".join(_xml(k, v) for k, v in value.items()) + f"</{name}>"
    if isinstance(value, list) and all(isinstance(i, dict) and len(i) == 1 for i in value):
        items = "".join(_xml(*next(iter(i.items()))) for i in value)
        return f'<{name} type="array">{items}</{name}>'
    raise SigningError(
        f"braintree: {name!r}: an array holds objects of one key each (the item's element)"
    )


def braintree_subject(event: EventToSign) -> dict[str, Any]:
    kind = event.event_type
    if kind == "check":
        return {"check": True}
    element = next((s for s in SUBJECTS if kind.startswith(s + "_")), kind.split("_")[0])
    if kind == "transaction_reviewed":
        element = "transaction_review"
    subject: dict[str, Any] = {"id": event.event_id}
    if element == "subscription":
        subject.update(status="Past Due", transactions=[], add_ons=[], discounts=[])
    return {element: subject}


def sign_braintree(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = hashlib.sha1(require_secret(keys, source)).digest()  # noqa: S324 (Braintree's scheme)
    public = source.variable("WEBHOOK_PUBLIC_KEY_").split(",")[0].strip()
    if not public:
        raise SigningError(
            f"braintree: set {source.variable_name('WEBHOOK_PUBLIC_KEY_')}, the public key "
            "the private key pairs with"
        )
    if not KIND.fullmatch(event.event_type):
        raise SigningError("braintree: the type is a kind: letters, digits and '_'")
    subject = braintree_subject(event) if event.data is None else event.data
    subject = object_data(subject, "braintree", "the <subject>'s elements")
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<notification>'
        f'<timestamp type="datetime">{iso(SAMPLE_TIME)}</timestamp>'
        f"<kind>{event.event_type}</kind>" + _xml("subject", subject) + "</notification>\n"
    )
    payload = base64.encodebytes(xml.encode()).decode()
    signature = f"{public}|{hex_hmac(key, payload.encode(), 'sha1')}"
    body = urlencode({"bt_signature": signature, "bt_payload": payload}).encode()
    return SignedRequest(event.url, dict(FORM), body, body_digest(payload.encode()))
