"""What is particular to some schemes: URLs behind a proxy, Twilio's JSON and repeated
fields, Mailgun's legacy form, Adyen batches, Discord interactions, form payloads reaching
handlers, and keys in the wrong form stopping startup."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import Adyen.util
import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from twilio.request_validator import RequestValidator

from app.settings import ConfigError
from tests.providers import signing as s
from tests.providers.cases import BY_NAME
from workers import Event, handler

ClientFactory = Callable[..., TestClient]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


def client_for(make_client: ClientFactory, provider: str, key: s.Key, **extra: Any) -> TestClient:
    return make_client(**BY_NAME[provider].config(key, **extra))


def test_behind_a_proxy_twilio_is_verified_against_webhook_public_url(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    public = "https://hooks.example.com/edge"
    params = {"MessageSid": "SM1", "SmsStatus": "received", "Body": "hi"}
    url = f"{public}/webhooks/twilio?x=1"
    headers = {
        **FORM,
        "X-Twilio-Signature": RequestValidator(key.secret).compute_signature(url, params),
    }
    body = urlencode(params).encode()
    proxied = client_for(make_client, "twilio", key, webhook_public_url=public + "/")
    assert proxied.post("/webhooks/twilio?x=1", content=body, headers=headers).status_code == 200
    direct = client_for(make_client, "twilio", key)
    assert direct.post("/webhooks/twilio?x=1", content=body, headers=headers).status_code == 401


def test_twilio_json_bodies_are_checked_against_body_sha256(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for(make_client, "twilio", key)
    body = b'{"property": "value"}'
    query = "bodySHA256=" + hashlib.sha256(body).hexdigest()
    url = f"{s.BASE}twilio?{query}"
    signature = RequestValidator(key.secret).compute_signature(url, {})
    assert RequestValidator(key.secret).validate(url, body.decode(), signature)
    headers = {"X-Twilio-Signature": signature, "Content-Type": "application/json"}
    ok = client.post(f"/webhooks/twilio?{query}", content=body, headers=headers)
    assert ok.json()["status"] == "accepted"
    other = client.post(
        f"/webhooks/twilio?{query}", content=b'{"property": "valuE"}', headers=headers
    )
    assert other.status_code == 401


class MultiDict(dict[str, list[str]]):
    """The multi-value mapping Twilio's validator reads (`getall`), as Flask's is."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        super().__init__()
        for name, value in pairs:
            self.setdefault(name, []).append(value)

    def getall(self, name: str) -> list[str]:
        return self[name]


def test_twilio_repeated_fields_sign_as_its_sdk_signs_them(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    pairs = [("To", "+2"), ("To", "+1"), ("To", "+1"), ("MessageStatus", "sent")]
    url = f"{s.BASE}twilio"
    signature = RequestValidator(key.secret).compute_signature(url, MultiDict(pairs))
    headers = {**FORM, "X-Twilio-Signature": signature}
    response = client_for(make_client, "twilio", key).post(
        "/webhooks/twilio", content=urlencode(pairs).encode(), headers=headers
    )
    assert response.status_code == 200, response.text


def test_hubspot_signs_its_uri_with_some_escapes_decoded(
    make_client: ClientFactory, redis: Redis
) -> None:
    from hubspot.utils.signature import Signature

    key = s.plain_key("k")
    body = b'[{"eventId": 1, "subscriptionType": "deal.creation", "attemptNumber": 0}]'
    stamp = str(int(time.time() * 1000))
    # HubSpot decodes %3A and %40 in what it signs, not %20.
    signed_uri = f"{s.BASE}hubspot?portal=a:b@c&q=%20"
    signature = Signature.get_signature(key.secret, body.decode(), "v3", signed_uri, "POST", stamp)
    headers = {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": stamp}
    response = client_for(make_client, "hubspot", key).post(
        "/webhooks/hubspot?portal=a%3Ab%40c&q=%20", content=body, headers=headers
    )
    assert response.status_code == 200, response.text


def test_a_hubspot_retry_differs_only_in_attempt_number_and_is_a_duplicate(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for(make_client, "hubspot", key)
    first = s.sign_hubspot(key, "obj-1", int(time.time()), attempt=0)
    retry = s.sign_hubspot(key, "obj-1", int(time.time()), attempt=1)
    assert first.body != retry.body
    for signed, status in ((first, "accepted"), (retry, "duplicate")):
        response = client.post("/webhooks/hubspot", content=signed.body, headers=signed.headers)
        assert response.json()["status"] == status


def test_mailgun_legacy_form_webhooks_verify_too(make_client: ClientFactory, redis: Redis) -> None:
    key = s.plain_key("k")
    ts, token = str(int(time.time())), "t" * 50
    fields = {
        "timestamp": ts,
        "token": token,
        "signature": s.hex_hmac(key.secret, f"{ts}{token}".encode()),
        "event": "opened",
    }
    client = client_for(make_client, "mailgun", key)
    ok = client.post("/webhooks/mailgun", content=urlencode(fields).encode(), headers=FORM)
    assert ok.json() == {"status": "accepted", "id": token}
    [job] = jobs(redis)
    assert (job.meta["type"], job.meta["payload_format"]) == ("opened", "form")
    multipart = {"Content-Type": "multipart/form-data; boundary=x"}
    assert client.post("/webhooks/mailgun", content=b"--x--", headers=multipart).status_code == 400


def test_every_adyen_item_must_verify(make_client: ClientFactory, redis: Redis) -> None:
    key = s.hex_key("k")
    good, other = s.adyen_item(key, "psp-1"), s.adyen_item(s.hex_key("other"), "psp-2")
    client = client_for(make_client, "adyen", key)
    mixed = json.dumps({"live": "false", "notificationItems": [good, other]}).encode()
    assert client.post("/webhooks/adyen", content=mixed).status_code == 401
    both = json.dumps(
        {"live": "false", "notificationItems": [good, s.adyen_item(key, "psp-2")]}
    ).encode()
    response = client.post("/webhooks/adyen", content=both)
    assert response.text == "[accepted]"
    assert sorted(job.meta["event_id"] for job in jobs(redis)) == [
        "psp-1:AUTHORISATION:true",
        "psp-2:AUTHORISATION:true",
    ]


def adyen_batch(*items: dict[str, Any]) -> bytes:
    return json.dumps({"live": "false", "notificationItems": list(items)}).encode()


def test_an_adyen_batch_is_one_event_per_item_each_a_notification_that_verifies_alone(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.hex_key("k")
    items = [s.adyen_item(key, "psp-1"), s.adyen_item(key, "psp-2", value=99)]
    response = client_for(make_client, "adyen", key).post(
        "/webhooks/adyen", content=adyen_batch(*items)
    )
    assert response.text == "[accepted]"
    queued = {job.meta["event_id"]: job for job in jobs(redis)}
    for item in items:
        psp = item["NotificationRequestItem"]["pspReference"]
        job = queued[f"{psp}:AUTHORISATION:true"]
        alone = json.loads(job.args[3])
        assert alone == {"live": "false", "notificationItems": [item]}
        assert Adyen.util.is_valid_hmac_notification(item["NotificationRequestItem"], key.secret)


def test_a_captured_adyen_item_rewrapped_in_new_batches_runs_once(
    make_client: ClientFactory, redis: Redis
) -> None:
    # The attacker's side: Adyen's HMAC has no timestamp, so one captured item can be put
    # in any number of new batches, each with a different digest.
    key = s.hex_key("k")
    captured = s.adyen_item(key, "psp-1")
    client = client_for(make_client, "adyen", key)
    assert client.post("/webhooks/adyen", content=adyen_batch(captured)).text == "[accepted]"
    for n in range(3):
        others = [s.adyen_item(key, f"psp-other-{n}-{i}") for i in range(n + 1)]
        replayed = client.post("/webhooks/adyen", content=adyen_batch(*others, captured))
        assert replayed.status_code == 200
        replayed_twice = client.post("/webhooks/adyen", content=adyen_batch(captured, captured))
        assert replayed_twice.status_code == 200
    ids = [job.meta["event_id"] for job in jobs(redis)]
    assert ids.count("psp-1:AUTHORISATION:true") == 1
    assert len(ids) == len(set(ids)) == 1 + 1 + 2 + 3


def test_an_adyen_body_that_repeats_a_key_is_refused(
    make_client: ClientFactory, redis: Redis
) -> None:
    # The attacker's side: the verifier reads the last `eventCode` (Python's rule), a
    # handler's first-wins parser the first, which the signature never covered.
    key = s.hex_key("k")
    signed = json.dumps(s.adyen_item(key, "psp-1")["NotificationRequestItem"])
    item = signed.replace('"eventCode":', '"eventCode": "REFUND", "eventCode":', 1)
    body = f'{{"live": "false", "notificationItems": [{{"NotificationRequestItem": {item}}}]}}'
    response = client_for(make_client, "adyen", key).post("/webhooks/adyen", content=body)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


def test_adyen_published_example_item_verifies(make_client: ClientFactory, redis: Redis) -> None:
    # Adyen's docs example (hex key 4478...A056), checked by the Adyen library too.
    key = s.Key("44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056")
    item = {
        "pspReference": "7914073381342284",
        "merchantAccountCode": "TestMerchant",
        "merchantReference": "TestPayment-1407325143704",
        "amount": {"value": 1130, "currency": "EUR"},
        "eventCode": "AUTHORISATION",
        "success": "true",
        "additionalData": {"hmacSignature": "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="},
    }
    body = json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]})
    response = client_for(make_client, "adyen", key).post("/webhooks/adyen", content=body)
    assert response.text == "[accepted]"


def test_discord_defers_each_kind_of_interaction_and_refuses_unknown_ones(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.ed25519_key("k")
    client = client_for(make_client, "discord", key)
    expected = {
        2: {"type": 5},
        3: {"type": 6},
        4: {"type": 8, "data": {"choices": []}},
        5: {"type": 5},
    }
    for kind, answer in expected.items():
        signed = s.sign_discord(key, f"i-{kind}", int(time.time()), kind=kind)
        assert (
            client.post("/webhooks/discord", content=signed.body, headers=signed.headers).json()
            == answer
        )
    odd = s.sign_discord(key, "i-9", int(time.time()), kind=9)
    assert (
        client.post("/webhooks/discord", content=odd.body, headers=odd.headers).status_code == 400
    )


def test_a_sendgrid_body_that_is_not_a_batch_is_400(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.p256_key("k")
    ts = str(int(time.time()))
    body = b'{"event": "delivered"}'
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    signature = base64.b64encode(
        key.material.sign(ts.encode() + body, ec.ECDSA(hashes.SHA256()))
    ).decode()
    headers = {
        "X-Twilio-Email-Event-Webhook-Signature": signature,
        "X-Twilio-Email-Event-Webhook-Timestamp": ts,
    }
    response = client_for(make_client, "sendgrid", key).post(
        "/webhooks/sendgrid", content=body, headers=headers
    )
    assert response.status_code == 400


def test_form_payloads_reach_handlers_as_fields_with_the_exact_bytes(
    make_settings: Callable[..., Any],
    make_client: ClientFactory,
    redis: Redis,
    run_worker: Callable[..., Any],
) -> None:
    key = s.braintree_key("k")
    settings = make_settings(**BY_NAME["braintree"].config(key))
    url = settings.redis_url

    def seen(event: Event) -> None:
        Redis.from_url(url).rpush("seen", json.dumps([sorted(event.payload), event.raw.decode()]))

    handler("braintree", "subscription_went_past_due")(seen)
    signed = s.sign_braintree(key, "sub_1", int(time.time()))
    client = make_client(settings)
    assert (
        client.post("/webhooks/braintree", content=signed.body, headers=signed.headers).status_code
        == 200
    )
    run_worker(settings)
    fields, raw = json.loads(redis.lindex("seen", 0) or b"[]")
    assert fields == ["bt_payload", "bt_signature"] and raw == signed.body.decode()


@pytest.mark.parametrize(
    ("provider", "secret", "variable"),
    [
        ("discord", "not-hex", "WEBHOOK_SECRET_DISCORD"),
        ("sendgrid", "YWJj", "WEBHOOK_SECRET_SENDGRID"),
        ("adyen", "zz", "WEBHOOK_SECRET_ADYEN"),
        ("clerk", "whsec_***", "WEBHOOK_SECRET_CLERK"),
        ("braintree", "sk_x9", "WEBHOOK_PUBLIC_KEY_BRAINTREE"),
        ("twilio", "", "WEBHOOK_SECRET_TWILIO"),
        ("standard", "whsec_not*base64!", "WEBHOOK_SECRET_STANDARD"),
    ],
)
def test_a_key_in_the_wrong_form_stops_startup_naming_the_variable(
    provider: str, secret: str, variable: str, make_settings: Callable[..., Any]
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_settings(
            webhook_sources=provider, per_source={f"WEBHOOK_SECRET_{provider.upper()}": secret}
        )
    assert str(raised.value).startswith(variable) and (
        not secret or secret not in str(raised.value)
    )


@pytest.mark.parametrize("kind", [[2], {"2": 2}, True, 2.0, "2", None])
def test_a_signed_discord_interaction_whose_type_is_not_an_integer_is_400(
    kind: object, make_client: ClientFactory, redis: Redis
) -> None:
    # A list was a 500 (`kind in TYPES` on an unhashable value), `true` a PING.
    key = s.ed25519_key("k")
    signed = s.sign_discord(key, "i-odd", int(time.time()), kind=kind)  # type: ignore[arg-type]
    response = client_for(make_client, "discord", key).post(
        "/webhooks/discord", content=signed.body, headers=signed.headers
    )
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


@pytest.mark.parametrize(
    "change",
    [
        {"Type": ["Notification"]},
        {"Type": {"Notification": 1}},
        {"Type": None},
        {"SignatureVersion": ["2"]},
        {"SignatureVersion": {"2": 2}},
        {"SignatureVersion": 2},
        {"Signature": ["x"]},
        {"SigningCertURL": {"url": "x"}},
        {"MessageId": ["m"]},
        {"Subject": {"a": 1}},
        {"Timestamp": 1700000000},
    ],
)
def test_an_sns_message_with_a_value_of_another_type_is_401_not_500(
    change: dict[str, object], make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("k1")
    message = json.loads(s.sign_sns(key, "m-odd", int(time.time())).body)
    body = json.dumps({**message, **change}).encode()
    response = client_for(make_client, "sns", key).post("/webhooks/sns", content=body)
    assert response.status_code == 401, response.text
    assert jobs(redis) == []


@pytest.mark.parametrize("odd", [[], {}, [""], 1.5, True])
@pytest.mark.parametrize("field", ["originalReference", "merchantReference"])
def test_an_adyen_signed_field_of_another_type_is_401_even_when_it_would_sign_the_same(
    field: str, odd: object, make_client: ClientFactory, redis: Redis
) -> None:
    # Signed as "" (as a list, an object or a fraction used to sign): only the type changed.
    key = s.hex_key("k")
    wrapped = s.adyen_item(key, "psp-odd")
    item = wrapped["NotificationRequestItem"]
    item[field] = ""
    signature = Adyen.util.generate_notification_sig(
        {k: v for k, v in item.items() if k != "additionalData"}, key.secret
    )
    item["additionalData"] = {"hmacSignature": signature.decode()}
    client = client_for(make_client, "adyen", key)
    body = {"live": "false", "notificationItems": [wrapped]}
    assert client.post("/webhooks/adyen", content=json.dumps(body)).text == "[accepted]"
    item[field] = odd
    response = client.post("/webhooks/adyen", content=json.dumps(body))
    assert response.status_code == 401, response.text
