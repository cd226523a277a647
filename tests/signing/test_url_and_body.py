"""The URL-signed and in-body signers (Twilio, HubSpot, Mailgun, Adyen, Braintree) against
the real app and Redis, and against each provider's SDK: what they sign is accepted once
with the id they say and the type given, then a duplicate; a changed signed byte is
refused; `data` replaces the event object each defines (`workers/signing/url_and_body.py`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

import Adyen.util
import braintree
import pytest
from braintree.util.xml_util import XmlUtil
from fastapi.testclient import TestClient
from hubspot.utils.signature import Signature as HubSpotSignature
from mailgun.security import SecurityGuard
from redis import Redis
from twilio.request_validator import RequestValidator

from app.settings import Settings
from tests.providers.test_vectors import TWILIO_URL, VECTORS, twilio_form
from tests.signing.harness import Target
from workers.signing import SIGNERS, EventToSign, Keys, SignedRequest, SigningError
from workers.signing.url_and_body import hubspot_signature, twilio_signature

BASE = "http://testserver/webhooks/"
TWIML = b'<?xml version="1.0" encoding="UTF-8"?><Response/>'
Tamper = Callable[[SignedRequest], SignedRequest]


def body_replace(old: bytes, new: bytes) -> Tamper:
    def tamper(request: SignedRequest) -> SignedRequest:
        assert old in request.body, (old, request.body)
        return replace(request, body=request.body.replace(old, new, 1))

    return tamper


def header_change(name: str, change: Callable[[str], str]) -> Tamper:
    def tamper(request: SignedRequest) -> SignedRequest:
        return replace(request, headers={**request.headers, name: change(request.headers[name])})

    return tamper


def other_url(request: SignedRequest) -> SignedRequest:
    return replace(request, url=request.url + "?tenant=eu")


def plus_one(value: str) -> str:
    return str(int(value) + 1)


def form(request: SignedRequest) -> dict[str, str]:
    return dict(parse_qsl(request.body.decode(), keep_blank_values=True))


def braintree_gateway(case: Case) -> Any:
    config = braintree.Configuration(
        braintree.Environment.Sandbox,
        merchant_id="m",
        public_key=case.variables["PUBLIC_KEY"],
        private_key=case.secret,
    )
    return braintree.BraintreeGateway(config)


def braintree_subject(request: SignedRequest) -> Any:
    xml = base64.b64decode(form(request)["bt_payload"])
    return XmlUtil.dict_from_xml(xml)["notification"]["subject"]


# --- the SDK oracles: each raises or returns False when the SDK disagrees -----------------


def twilio_sdk(case: Case, request: SignedRequest) -> bool:
    validator = RequestValidator(case.secret)
    return bool(
        validator.validate(request.url, form(request), request.headers["X-Twilio-Signature"])
    )


def hubspot_sdk(case: Case, request: SignedRequest) -> bool:
    return bool(
        HubSpotSignature.is_valid(
            signature=request.headers["X-HubSpot-Signature-v3"],
            client_secret=case.secret,
            request_body=request.body.decode(),
            http_uri=request.url,
            http_method="POST",
            signature_version="v3",
            timestamp=request.headers["X-HubSpot-Request-Timestamp"],
        )
    )


def mailgun_sdk(case: Case, request: SignedRequest) -> bool:
    signed = json.loads(request.body)["signature"]
    return bool(
        SecurityGuard.verify_webhook(
            case.secret,
            signed["token"],
            signed["timestamp"],
            signed["signature"],
            max_age_seconds=0,
        )
    )


def adyen_sdk(case: Case, request: SignedRequest) -> bool:
    return bool(Adyen.util.is_valid_hmac_notification(json.loads(request.body), case.secret))


def braintree_sdk(case: Case, request: SignedRequest) -> bool:
    fields = form(request)
    notification = braintree_gateway(case).webhook_notification.parse(
        fields["bt_signature"], fields["bt_payload"]
    )
    return bool(notification.kind == case.event_type)


# --- where each signer puts the event object, read back from the request -----------------


def twilio_object(request: SignedRequest) -> Any:
    return form(request)


def hubspot_object(request: SignedRequest) -> Any:
    [event] = json.loads(request.body)
    return {
        k: v for k, v in event.items() if k not in ("eventId", "subscriptionType", "attemptNumber")
    }


def mailgun_object(request: SignedRequest) -> Any:
    data = json.loads(request.body)["event-data"]
    return {k: v for k, v in data.items() if k not in ("id", "event", "timestamp")}


def adyen_object(request: SignedRequest) -> Any:
    [wrapped] = json.loads(request.body)["notificationItems"]
    item = wrapped["NotificationRequestItem"]
    extra = {k: v for k, v in item["additionalData"].items() if k != "hmacSignature"}
    rest = {
        k: v for k, v in item.items() if k not in ("pspReference", "eventCode", "additionalData")
    }
    return {**rest, "additionalData": extra}


@dataclass(frozen=True)
class Case:
    provider: str
    secret: str
    event_type: str
    sdk: Callable[[Case, SignedRequest], bool]
    tampers: tuple[Tamper, ...]
    data: Any  # an event object of the provider's
    read_object: Callable[[SignedRequest], Any]
    expected: Callable[[Any], Any] = lambda data: data  # what read_object gives for `data`
    ack: bytes | None = None
    variables: dict[str, str] = field(default_factory=dict)

    def config(self) -> dict[str, Any]:
        name = self.provider.upper()
        per_source = {f"WEBHOOK_SECRET_{name}": self.secret}
        per_source.update({f"WEBHOOK_{k}_{name}": v for k, v in self.variables.items()})
        return {"webhook_sources": self.provider, "per_source": per_source}

    def event(self, event_id: str = "evt_1", data: Any = None, **changes: Any) -> EventToSign:
        values = {"url": BASE + self.provider, "timestamp": int(time.time()), **changes}
        return EventToSign(event_id, self.event_type, data=data, **values)


PLAIN = "secret-k1-0123456789"
CASES = [
    Case(
        "twilio",
        PLAIN,
        "delivered",
        twilio_sdk,
        (
            body_replace(b"MessageStatus=delivered", b"MessageStatus=Delivered"),
            body_replace(b"To=%2B1555", b"To=%2B1556"),
            other_url,
        ),
        {"ErrorCode": "30003", "Body": "Hello there"},
        twilio_object,
        # Added to the sample's fields; MessageStatus stays the type.
        lambda data: {**data, "MessageStatus": "delivered"},
        ack=TWIML,
    ),
    Case(
        "hubspot",
        PLAIN,
        "contact.propertyChange",
        hubspot_sdk,
        (
            body_replace(b'"propertyName":"email"', b'"propertyName":"Email"'),
            header_change("X-HubSpot-Request-Timestamp", plus_one),
            other_url,
        ),
        {"objectId": 901, "propertyName": "lifecyclestage", "propertyValue": "customer"},
        hubspot_object,
    ),
    Case(
        "mailgun",
        PLAIN,
        "delivered",
        mailgun_sdk,
        (
            # What Mailgun signs: the timestamp and the token (the event data is not signed).
            body_replace(b'"token":"', b'"token":"0'),
            lambda r: body_replace(b'"timestamp":"', b'"timestamp":"1')(r),
        ),
        {"recipient": "carol@example.com", "tags": ["welcome"], "user-variables": {"plan": "pro"}},
        mailgun_object,
    ),
    Case(
        "adyen",
        hashlib.sha256(b"adyen-k1").hexdigest().upper(),
        "AUTHORISATION",
        adyen_sdk,
        (
            body_replace(b'"value":1000', b'"value":1001'),
            body_replace(b'"merchantReference":"order-', b'"merchantReference":"Order-'),
            body_replace(b'"success":"true"', b'"success":"false"'),
        ),
        {
            "amount": {"currency": "USD", "value": 2599},
            "merchantAccountCode": "AcmeShop",
            "merchantReference": "order-77",
            "success": "true",
            "additionalData": {"shopperReference": "alice"},
        },
        adyen_object,
        ack=b"[accepted]",
    ),
    Case(
        "braintree",
        "private-key-k1-0123456789",
        "subscription_went_past_due",
        braintree_sdk,
        (lambda r: replace(r, body=r.body.replace(b"bt_payload=P", b"bt_payload=Q", 1)),),
        {
            "subscription": {
                "id": "sub_9",
                "status": "Past Due",
                "balance": "12.00",
                "billing_day_of_month": 5,
                "never_expires": True,
                "add_ons": [{"add_on": {"id": "extra", "amount": "5.00", "quantity": 2}}],
            }
        },
        braintree_subject,
        # As Braintree's SDK reads the XML back: an array is the list of its items.
        lambda data: {
            "subscription": {
                **data["subscription"],
                "add_ons": [a["add_on"] for a in data["subscription"]["add_ons"]],
            }
        },
        variables={"PUBLIC_KEY": "pk_k1"},
    ),
]


@pytest.fixture(params=CASES, ids=[c.provider for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def target(
    case: Case,
    make_settings: Callable[..., Settings],
    make_client: Callable[..., TestClient],
    redis: Redis,
) -> Target:
    settings = make_settings(**case.config())
    return Target(settings.sources[case.provider], make_client(settings), redis)


def sign(case: Case, target: Target, event: EventToSign) -> SignedRequest:
    return SIGNERS[case.provider](target.source, event, Keys(case.secret))


def answered(case: Case, response: Any, event_id: str, status: str = "accepted") -> bool:
    if response.status_code != 200:
        return False
    if case.ack is not None:  # the provider's own answer: the queue tells the rest
        return bool(response.content == case.ack)
    return bool(response.json() == {"status": status, "id": event_id})


def test_the_signed_request_is_accepted_with_its_id_and_the_type(
    case: Case, target: Target
) -> None:
    signed = sign(case, target, case.event())
    response = target.post(signed)
    assert answered(case, response, signed.event_id), response.text
    [job] = target.jobs()
    assert (job.meta["event_id"], job.meta["type"]) == (signed.event_id, case.event_type)
    assert signed.url == BASE + case.provider


def test_an_id_with_outer_spaces_is_announced_as_the_receiver_answers_it(
    case: Case, target: Target
) -> None:
    # In a header (Twilio's idempotency token), HTTP drops them on the way; in a body, not.
    signed = sign(case, target, case.event(" evt_spaced "))
    response = target.post(signed)
    assert answered(case, response, signed.event_id), response.text
    [job] = target.jobs()
    assert job.meta["event_id"] == signed.event_id


def test_the_same_event_again_is_a_duplicate_and_another_id_is_not(
    case: Case, target: Target
) -> None:
    event = case.event("evt_1")
    first = sign(case, target, event)
    assert answered(case, target.post(first), first.event_id)
    again = target.post(sign(case, target, event))
    assert answered(case, again, first.event_id, "duplicate"), again.text
    # As `webhooks send` would send it again a second later: the same event.
    later = sign(case, target, replace(event, timestamp=event.timestamp + 1))
    assert later.event_id == first.event_id
    assert answered(case, target.post(later), first.event_id, "duplicate")
    assert len(target.jobs()) == 1
    other = sign(case, target, case.event("evt_2"))
    assert other.event_id != first.event_id
    assert answered(case, target.post(other), other.event_id)
    assert {j.meta["event_id"] for j in target.jobs()} == {first.event_id, other.event_id}


def test_a_changed_signed_byte_is_refused_and_nothing_is_queued(case: Case, target: Target) -> None:
    signed = sign(case, target, case.event())
    for tamper in case.tampers:
        changed = tamper(signed)
        assert changed != signed
        response = target.post(changed)
        assert response.status_code in (400, 401), response.text
    assert target.jobs() == []


def test_the_providers_sdk_accepts_the_signed_request(case: Case, target: Target) -> None:
    assert case.sdk(case, sign(case, target, case.event()))
    assert case.sdk(case, sign(case, target, case.event("evt_2", case.data)))


def test_data_replaces_the_event_object(case: Case, target: Target) -> None:
    signed = sign(case, target, case.event("evt_data", case.data))
    found = case.read_object(signed)
    if case.provider == "twilio":  # added to the sample form: those fields, as given
        found = {k: v for k, v in found.items() if k in case.data or k == "MessageStatus"}
    assert found == case.expected(case.data)
    assert answered(case, target.post(signed), signed.event_id)
    [job] = target.jobs()
    assert (job.meta["event_id"], job.meta["type"]) == (signed.event_id, case.event_type)


def test_data_of_the_wrong_shape_or_no_secret_is_one_line_signing_error(
    case: Case, target: Target
) -> None:
    with pytest.raises(SigningError) as bad_data:
        sign(case, target, case.event(data=["not", "an", "object"]))
    with pytest.raises(SigningError) as no_secret:
        SIGNERS[case.provider](target.source, case.event(), Keys(""))
    for error in (bad_data.value, no_secret.value):
        assert str(error) and "\n" not in str(error)


# --- per provider: what only that provider has -------------------------------------------


def test_twilio_signs_as_twilios_published_example() -> None:
    # Twilio's security docs vector (also twilio-python's test): token 12345.
    [vector] = [v for v in VECTORS if v.provider == "twilio"][:1]
    pairs = parse_qsl(twilio_form().decode())
    ours = twilio_signature(b"12345", TWILIO_URL, pairs)
    assert ours == vector.headers["x-twilio-signature"]


def test_hubspot_signs_as_hubspots_documented_example() -> None:
    # HubSpot's v3 request-validation docs example, confirmed there by hubspot-api-client.
    [vector] = [v for v in VECTORS if v.provider == "hubspot"]
    headers = vector.headers
    stamp = headers["x-hubspot-request-timestamp"]
    ours = hubspot_signature(vector.secret.encode(), "POST", vector.url, vector.body, stamp)
    assert ours == headers["x-hubspot-signature-v3"]


def test_hubspot_signs_the_uri_with_hubspots_escapes_decoded(
    make_settings: Callable[..., Settings], make_client: Callable[..., TestClient], redis: Redis
) -> None:
    [case] = [c for c in CASES if c.provider == "hubspot"]
    settings = make_settings(**case.config())
    client = make_client(settings)
    url = BASE + "hubspot?portal=a%3Ab%40c"
    signed = SIGNERS["hubspot"](settings.sources["hubspot"], case.event(url=url), Keys(PLAIN))
    assert signed.url == url
    response = client.post(signed.url, content=signed.body, headers=signed.headers)
    assert response.json() == {"status": "accepted", "id": signed.event_id}


def test_adyen_answers_psp_reference_event_code_success_and_refuses_a_non_hex_key(
    make_settings: Callable[..., Settings],
) -> None:
    [case] = [c for c in CASES if c.provider == "adyen"]
    source = make_settings(**case.config()).sources["adyen"]
    signed = SIGNERS["adyen"](source, case.event("8535296650153317"), Keys(case.secret))
    assert signed.event_id == "8535296650153317:AUTHORISATION:true"
    failed = case.event("8535296650153317", {**case.data, "success": False})
    assert SIGNERS["adyen"](source, failed, Keys(case.secret)).event_id.endswith(":false")
    with pytest.raises(SigningError, match="hex"):
        SIGNERS["adyen"](source, case.event(), Keys("not-hex-0123456789"))
    with pytest.raises(SigningError, match="'merchantReference'"):
        bad = case.event(data={**case.data, "merchantReference": ["a"]})
        SIGNERS["adyen"](source, bad, Keys(case.secret))


def test_braintree_puts_the_event_id_in_the_subject_and_needs_the_public_key(
    make_settings: Callable[..., Settings],
) -> None:
    [case] = [c for c in CASES if c.provider == "braintree"]
    source = make_settings(**case.config()).sources["braintree"]
    signed = SIGNERS["braintree"](source, case.event("sub_42"), Keys(case.secret))
    fields = form(signed)
    notification = braintree_gateway(case).webhook_notification.parse(
        fields["bt_signature"], fields["bt_payload"]
    )
    assert notification.subscription.id == "sub_42"
    assert signed.event_id == "sha256:" + hashlib.sha256(fields["bt_payload"].encode()).hexdigest()
    with pytest.raises(SigningError, match="WEBHOOK_PUBLIC_KEY_BRAINTREE"):
        SIGNERS["braintree"](replace(source, variables={}), case.event(), Keys(case.secret))
    with pytest.raises(SigningError, match="kind"):
        SIGNERS["braintree"](source, replace(case.event(), event_type="a b"), Keys(case.secret))


def test_twilio_posts_a_form_of_the_fields_it_signed(
    make_settings: Callable[..., Settings],
) -> None:
    [case] = [c for c in CASES if c.provider == "twilio"]
    source = make_settings(**case.config()).sources["twilio"]
    signed = SIGNERS["twilio"](source, case.event("tok-1"), Keys(PLAIN))
    assert signed.headers["I-Twilio-Idempotency-Token"] == "tok-1" == signed.event_id
    assert signed.body == urlencode(form(signed)).encode()
    assert form(signed)["MessageSid"].startswith("SM") and len(form(signed)["MessageSid"]) == 34
