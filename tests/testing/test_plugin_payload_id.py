"""A payload's own id, from a user's tests: where the provider reads its event id from the
payload given (hmac's body `id`, Mailgun's `event-data.id`, Adyen's `pspReference`...), that
id stands and is the event's; an `id=` that disagrees is one line naming both. Where the
provider's id lives elsewhere (Stripe's envelope, GitHub's and Shopify's delivery headers,
Standard Webhooks' `webhook-id`), the payload's `id` is data, sent as given."""

from __future__ import annotations

import pytest

from tests.testing.project import run, user_project

# A recipe whose event id is a path into the body, which `payload` is for a recipe source.
ACME = (
    '{"signature_header": "X-Acme-Signature", "signed": "{timestamp}.{body}", '
    '"timestamp": "header:X-Acme-Timestamp", "id": "json:delivery.id", "type": "json:kind"}'
)
ENV = (
    "WEBHOOK_SOURCES=inbound,stripe,github,shop:shopify,svix:standard,mail:mailgun,"
    "pay:adyen,crm:hubspot,sg:sendgrid,bank:plaid,acme:recipe\n"
    f"WEBHOOK_RECIPE_ACME='{ACME}'\n"
)

OWN_ID_TESTS = """
import copy
import json

import pytest

from workers.signing import SigningError

# source: (payload, its own id, where the body holds it, the id the receiver answers with;
# None where that is the body's digest, which the payload's own id is part of)
OWN = {
    "inbound": ({"id": "evt_p1", "data": {"total": 5}}, "evt_p1", ["id"], "evt_p1"),
    "mail": (
        {"id": "mg_p1", "recipient": "a@example.com"}, "mg_p1", ["event-data", "id"], "mg_p1"
    ),
    "pay": (
        {"pspReference": "PSP0001", "merchantReference": "o-1", "success": "true",
         "amount": {"currency": "EUR", "value": 100}},
        "PSP0001",
        ["notificationItems", 0, "NotificationRequestItem", "pspReference"],
        "PSP0001:AUTHORISATION:true",
    ),
    "crm": ({"eventId": 17, "objectId": 5}, 17, [0, "eventId"], None),
    "sg": ({"sg_event_id": "sg_p1", "email": "a@example.com"}, "sg_p1", [0, "sg_event_id"], None),
    "bank": ({"item_id": "item_p1"}, "item_p1", ["item_id"], None),
    "acme": ({"delivery": {"id": "dlv_p1"}, "total": 5}, "dlv_p1", ["delivery", "id"], "dlv_p1"),
}


def at(body, path):
    for step in path:
        body = body[step]
    return body


@pytest.mark.parametrize("source", list(OWN))
def test_the_payloads_own_id_is_the_event_id_and_stays_in_the_body(webhook_event, source):
    payload, own, where, answered = OWN[source]
    given = copy.deepcopy(payload)
    event = webhook_event(source, payload=payload)
    assert at(json.loads(event.raw), where) == own  # as given: 17 stays a number
    if answered is None:
        assert event.id.startswith("sha256:")
    else:
        assert event.id == answered
    assert payload == given  # the caller's dict is never changed
    # The same id given again is no conflict: the same event.
    assert webhook_event(source, payload=payload, id=str(own)).id == event.id


@pytest.mark.parametrize("source", list(OWN))
def test_an_id_that_disagrees_with_the_payloads_own_is_refused_naming_both(
    webhook_event, source
):
    payload, own = OWN[source][:2]
    with pytest.raises(SigningError) as refused:
        webhook_event(source, payload=payload, id="evt_other")
    message = str(refused.value)
    assert "\\n" not in message and "'evt_other'" in message and repr(str(own)) in message


def test_the_hmac_refusal_in_full(webhook_event):
    with pytest.raises(SigningError) as refused:
        webhook_event("inbound", "order.created", {"id": "evt_p1"}, id="evt_p2")
    assert str(refused.value) == (
        "hmac: the data has its own id, 'evt_p1', and the id given is 'evt_p2': "
        "give the same id, or none"
    )


def test_the_hmac_payloads_own_type_is_the_events_and_another_is_refused(webhook_event):
    event = webhook_event("inbound", payload={"type": "invoice.paid", "total": 5})
    assert (event.type, json.loads(event.raw)["type"]) == ("invoice.paid", "invoice.paid")
    assert webhook_event("inbound", "invoice.paid", {"type": "invoice.paid"}).type == (
        "invoice.paid"
    )
    with pytest.raises(SigningError) as refused:
        webhook_event("inbound", "order.created", {"type": "invoice.paid"})
    assert "the data has its own type, 'invoice.paid'" in str(refused.value)


# source, type, payload, where the body holds the payload: the event id is elsewhere
# (Stripe's envelope `id`, GitHub's X-GitHub-Delivery, X-Shopify-Event-Id, webhook-id).
ELSEWHERE = [
    ("stripe", "invoice.paid", {"id": "in_1", "amount_paid": 5}, ["data", "object"]),
    ("github", "issues", {"id": 5, "action": "opened"}, []),
    ("shop", "orders/create", {"id": 7, "total_price": "5.00"}, []),
    ("svix", "invoice.paid", {"id": "inv_1", "amount": 5}, ["data"]),
]


@pytest.mark.parametrize(("source", "kind", "payload", "where"), ELSEWHERE)
def test_where_the_event_id_is_not_the_payloads_its_id_is_data_left_as_given(
    webhook_event, source, kind, payload, where
):
    given = copy.deepcopy(payload)
    named = webhook_event(source, kind, payload, id="evt_h1")
    assert named.id == "evt_h1"
    assert at(json.loads(named.raw), where) == given
    made_up = webhook_event(source, kind, payload)
    assert made_up.id.startswith("evt_test_")
    assert at(json.loads(made_up.raw), where) == given
    assert payload == given
"""


def test_webhook_event_keeps_a_payloads_own_id(pytester: pytest.Pytester) -> None:
    user_project(pytester, ENV, test_own_id=OWN_ID_TESTS)
    result = run(pytester)
    result.assert_outcomes(passed=7 + 7 + 1 + 1 + 4)


STRIPE_SECRET, GITHUB_SECRET = "whsec_" + "s" * 32, "g" * 32
SIGNED_TESTS = """
import hashlib
import hmac
import json

import pytest
import stripe

from workers.signing import SigningError
from workers.testing import WebhookTestError

STRIPE_SECRET, GITHUB_SECRET = "whsec_" + "s" * 32, "g" * 32  # the project's .env has them


def test_the_receiver_answers_with_the_payloads_own_id(receiver, signed_request):
    headers, body = signed_request("inbound", {"id": "evt_p1", "total": 5})
    assert json.loads(body)["id"] == "evt_p1"
    answer = receiver.post("/webhooks/inbound", content=body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "evt_p1"}
    headers, body = signed_request("inbound", {"id": "evt_p1", "total": 5}, id="evt_p1")
    again = receiver.post("/webhooks/inbound", content=body, headers=headers)
    assert again.json() == {"status": "duplicate", "id": "evt_p1"}
    headers, body = signed_request("mail", {"id": "mg_p1", "recipient": "a@example.com"})
    assert json.loads(body)["event-data"]["id"] == "mg_p1"
    answer = receiver.post("/webhooks/mail", content=body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "mg_p1"}


def test_an_id_that_disagrees_is_refused_before_anything_is_signed(signed_request):
    with pytest.raises(SigningError, match="'evt_p1', and the id given is 'evt_p2'"):
        signed_request("inbound", {"id": "evt_p1"}, id="evt_p2")
    with pytest.raises(SigningError, match="'mg_p1', and the id given is 'evt_p2'"):
        signed_request("mail", {"id": "mg_p1"}, id="evt_p2")


def test_stripes_sdk_reads_the_event_id_given_and_the_objects_own(signed_request):
    headers, body = signed_request("stripe", {"id": "in_1"}, type="invoice.paid", id="evt_9")
    event = stripe.Webhook.construct_event(
        body.decode(), headers["Stripe-Signature"], STRIPE_SECRET
    )
    assert (event["id"], event["data"]["object"]["id"]) == ("evt_9", "in_1")


def test_githubs_delivery_header_is_the_id_given_and_the_body_is_as_given(
    receiver, signed_request
):
    headers, body = signed_request("github", {"id": 5, "action": "opened"}, type="issues",
                                   id="d-1")
    assert headers["X-GitHub-Delivery"] == "d-1"
    assert json.loads(body) == {"id": 5, "action": "opened"}
    expected = hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Hub-Signature-256"] == "sha256=" + expected
    answer = receiver.post("/webhooks/github", content=body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "d-1"}


def test_an_option_the_source_cannot_use_is_refused(signed_request):
    with pytest.raises(WebhookTestError) as refused:
        signed_request("interactions", secret="abc")
    assert str(refused.value) == (
        "secret= cannot apply to source 'interactions': discord signs with a private key "
        "(private_key=, PEM), not a secret"
    )
    with pytest.raises(WebhookTestError, match="^private_key= cannot apply to source 'inbound'"):
        signed_request("inbound", private_key=b"-----BEGIN PRIVATE KEY-----")
"""


def test_signed_request_keeps_a_payloads_own_id(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=inbound,stripe,github,mail:mailgun,interactions:discord\n"
        f"WEBHOOK_SECRET_STRIPE={STRIPE_SECRET}\nWEBHOOK_SECRET_GITHUB={GITHUB_SECRET}\n",
        test_signed=SIGNED_TESTS,
    )
    run(pytester).assert_outcomes(passed=5)
