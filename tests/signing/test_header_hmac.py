"""The header-HMAC signers (`workers/signing/header_hmac*.py`) held to the real receiver and,
where one exists, to the provider's SDK or a documented vector.

For each provider: its request is accepted with the id the signer announced, and queued
with that id and type; the same event again is a duplicate, another id a new event; any
signed byte changed is refused with nothing queued; the SDK (or vector) agrees; and
`event.data` is what the handler finds where the module's table says.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import standardwebhooks
import stripe
import svix.webhooks
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as openssl_hmac
from fastapi.testclient import TestClient
from paddle_billing.Notifications import Secret, Verifier
from pydantic import SecretStr
from pywa import utils as pywa_utils
from redis import Redis
from rq import Queue
from slack_sdk.signature import SignatureVerifier

from app.jobstate import EventCall, PayloadFormat
from app.providers import VERIFIERS
from app.providers.recipe_spec import Algorithm
from app.settings import Settings, SourceConfig
from workers.runtime.job_event import parse_payload
from workers.signing import SIGNERS, EventToSign, Keys, SignedRequest, SigningError, header_hmac
from workers.signing.defaults import DEFAULT_TYPE
from workers.signing.header_hmac_digest_ids import zoom_signature
from workers.signing.header_hmac_git import hub_signatures
from workers.signing.header_hmac_signed_ids import twitch_signature

ClientFactory = Callable[..., TestClient]
SettingsFactory = Callable[..., Settings]


def openssl(secret: str, body: bytes, algorithm: hashes.HashAlgorithm | None = None) -> bytes:
    """HMAC by OpenSSL (through `cryptography`), not Python's `hmac`: an independent
    implementation for the schemes whose provider publishes no SDK."""
    mac = openssl_hmac.HMAC(secret.encode(), algorithm or hashes.SHA256())
    mac.update(body)
    return mac.finalize()


# --- oracles: (request, secret) -> None, raising when the provider's side would refuse ------


def hmac_oracle(request: SignedRequest, secret: str) -> None:
    # Our own scheme: the seed article's recipe is `openssl dgst -sha256 -hmac SECRET`.
    assert request.headers["X-Signature-256"] == openssl(secret, request.body).hex()


def stripe_oracle(request: SignedRequest, secret: str) -> None:
    event = stripe.Webhook.construct_event(
        request.body.decode(), request.headers["Stripe-Signature"], secret
    )
    assert event.id == request.event_id


def github_oracle(request: SignedRequest, secret: str) -> None:
    # No SDK verifies GitHub's webhooks; GitHub's docs publish this vector.
    vector = hub_signatures(b"It's a Secret to Everybody", b"Hello, World!")
    assert vector["X-Hub-Signature-256"] == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )
    assert request.headers["X-Hub-Signature-256"] == "sha256=" + openssl(secret, request.body).hex()
    sha1 = openssl(secret, request.body, hashes.SHA1()).hex()
    assert request.headers["X-Hub-Signature"] == "sha1=" + sha1


def shopify_oracle(request: SignedRequest, secret: str) -> None:
    # No Shopify SDK in the test extras and no published vector: the base64 HMAC-SHA256 of
    # the raw body with the client secret, as Shopify's docs describe, computed by OpenSSL.
    expected = base64.b64encode(openssl(secret, request.body)).decode()
    assert request.headers["X-Shopify-Hmac-Sha256"] == expected


def slack_oracle(request: SignedRequest, secret: str) -> None:
    verifier = SignatureVerifier(secret)
    assert verifier.is_valid_request(request.body, request.headers)


def paddle_oracle(request: SignedRequest, secret: str) -> None:
    @dataclass
    class PaddleRequest:
        body: bytes
        headers: dict[str, str]

    # The SDK's own window is 5 s; what it checks here is the signature.
    verifier = Verifier(maximum_variance=300)
    assert verifier.verify(PaddleRequest(request.body, request.headers), Secret(secret))


def standard_oracle(request: SignedRequest, secret: str) -> None:
    standardwebhooks.Webhook(secret).verify(request.body, request.headers)
    svix.webhooks.Webhook(secret).verify(request.body, request.headers)


def gitlab_oracle(request: SignedRequest, secret: str) -> None:
    # GitLab signs nothing and has no SDK for it: its docs say X-Gitlab-Token carries the
    # webhook's secret token as entered.
    assert request.headers["X-Gitlab-Token"] == secret


def meta_oracle(request: SignedRequest, secret: str) -> None:
    signature = request.headers["X-Hub-Signature-256"]
    assert pywa_utils.webhook_updates_validator(secret, request.body, signature)


def twitch_oracle(request: SignedRequest, secret: str) -> None:
    # No SDK in the test extras: the EventSub docs' vector (tests/providers/test_vectors.py).
    body = (
        b'{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387-161a'
        b'-49f9-a165-0f21d7a4e1c4","type":"channel.follow","version":"2","status":"webhook_cal'
        b'lback_verification_pending"}}'
    )
    vector = twitch_signature(
        b"s3cre7-at-least-10-chars",
        "e76c6bd4-55c9-4987-8304-da1588d8988b",
        "2019-11-16T10:11:12.634234626Z",
        body,
    )
    assert vector == "sha256=6e19cce071ade6a7261ba67da22bc747a2e6e2615bad264c5e6030153910d136"
    h = request.headers
    signed = (h["Twitch-Eventsub-Message-Id"] + h["Twitch-Eventsub-Message-Timestamp"]).encode()
    expected = "sha256=" + openssl(secret, signed + request.body).hex()
    assert h["Twitch-Eventsub-Message-Signature"] == expected


def zoom_oracle(request: SignedRequest, secret: str) -> None:
    # No SDK in the test extras: Zoom's docs' scheme, its example (test_vectors.py).
    body = (
        b'{"event":"meeting.started","event_ts":1660000000123,"payload":{"account_id":"abc",'
        b'"object":{"id":"123"}}}'
    )
    vector = zoom_signature(b"LZHwkF0pS2KwMqdJ0Vjy_A", 1660000000, body)
    assert vector == "v0=cdcc633cec07e5c9329ef3962e6e7bc41c634052f0e424cd558a35b9442c6566"
    stamp = request.headers["x-zm-request-timestamp"]
    expected = "v0=" + openssl(secret, f"v0:{stamp}:".encode() + request.body).hex()
    assert request.headers["x-zm-signature"] == expected


def woocommerce_oracle(request: SignedRequest, secret: str) -> None:
    # No SDK: the vector of WooCommerce's generate_signature (test_vectors.py), through the
    # signer itself, whose PHP-style JSON writes exactly the vector's bytes.
    vector = sign("woocommerce", "wc_secret & more", "d1", "order.created", VECTOR_ORDER)
    assert vector.body == b'{"id":727,"status":"processing","currency":"USD","total":"29.35"}'
    assert (
        vector.headers["X-WC-Webhook-Signature"] == "IZ02NWEloS2G1DV/q+lcCP/vhCyW073BpNvkK3CZCoI="
    )
    expected = base64.b64encode(openssl(secret, request.body)).decode()
    assert request.headers["X-WC-Webhook-Signature"] == expected


def dropbox_oracle(request: SignedRequest, secret: str) -> None:
    # No SDK verifies notifications: the hapi-dropbox-webhooks fixture, through the signer.
    vector = sign("dropbox", "the_secret", "n1", "notification", {"delta": {"users": [12345]}})
    assert vector.body == b'{"delta": {"users": [12345]}}'
    assert vector.headers["X-Dropbox-Signature"] == (
        "0a8c16b085420b960dc78664279fe09e936a2a01b1f91064869d9e77dfd64529"
    )
    assert request.headers["X-Dropbox-Signature"] == openssl(secret, request.body).hex()


def xero_oracle(request: SignedRequest, secret: str) -> None:
    # No SDK in the test extras; Xero's intent-to-receive sample is an empty batch, not an
    # event the signer writes: the base64 HMAC-SHA256 of the body with the key as shown.
    expected = base64.b64encode(openssl(secret, request.body)).decode()
    assert request.headers["x-xero-signature"] == expected


VECTOR_ORDER = {"id": 727, "status": "processing", "currency": "USD", "total": "29.35"}


# --- tampering: one signed byte changed ----------------------------------------------------

Tamper = Callable[[SignedRequest], SignedRequest]


def body_byte(request: SignedRequest) -> SignedRequest:
    """The case of the body's last ASCII letter flipped."""
    body = bytearray(request.body)
    i = max(i for i, byte in enumerate(body) if chr(byte).isascii() and chr(byte).isalpha())
    body[i] ^= 0x20
    return replace(request, body=bytes(body))


def header_char(name: str) -> Tamper:
    """One character two thirds into the header changed (a hex or base64 digit)."""

    def tamper(request: SignedRequest) -> SignedRequest:
        value = request.headers[name]
        i = len(value) * 2 // 3
        swapped = value[:i] + ("a" if value[i] != "a" else "b") + value[i + 1 :]
        return replace(request, headers={**request.headers, name: swapped})

    return tamper


def header_number(name: str, pattern: str = r"^(\d+)") -> Tamper:
    """The number the pattern finds in the header, plus one (a signed unix timestamp)."""

    def tamper(request: SignedRequest) -> SignedRequest:
        value = re.sub(
            pattern,
            lambda m: m[0].replace(m[1], str(int(m[1]) + 1)),
            request.headers[name],
            count=1,
        )
        assert value != request.headers[name]
        return replace(request, headers={**request.headers, name: value})

    return tamper


def last_digit(name: str) -> Tamper:
    """The header's last digit changed (the nanoseconds of an RFC 3339 timestamp)."""

    def tamper(request: SignedRequest) -> SignedRequest:
        value = request.headers[name].rstrip("Z")
        changed = value[:-1] + str((int(value[-1]) + 1) % 10) + "Z"
        return replace(request, headers={**request.headers, name: changed})

    return tamper


def created_plus_one(request: SignedRequest) -> SignedRequest:
    body = re.sub(rb'"created":(\d+)', lambda m: b'"created":%d' % (int(m[1]) + 1), request.body)
    assert body != request.body
    return replace(request, body=body)


# --- cases -----------------------------------------------------------------------------------


def standard_secret() -> str:
    return "whsec_" + base64.b64encode(hashlib.sha256(b"standard-signing-key").digest()).decode()


def without(*names: str) -> Callable[[Any], Any]:
    return lambda payload: {k: v for k, v in payload.items() if k not in names}


def path(*steps: str | int) -> Callable[[Any], Any]:
    def get(payload: Any) -> Any:
        for step in steps:
            payload = payload[step]
        return payload

    return get


@dataclass(frozen=True)
class Case:
    provider: str
    secret: str
    event_type: str
    # The provider's SDK or documented vector: raises when that side would refuse.
    assert_agrees: Callable[[SignedRequest, str], None]
    tampers: dict[str, Tamper]
    # Where `event.data` lands in the payload the handler gets (the module's table).
    event_object: Callable[[Any], Any]
    # What it is there: the data as given, unless the envelope adds to it (Slack's type).
    expected: Callable[[dict[str, Any], str], Any] = lambda data, kind: data
    variables: dict[str, str] = field(default_factory=dict)

    def config(self) -> dict[str, Any]:
        name = self.provider.upper()
        variables = {f"WEBHOOK_{k}_{name}": v for k, v in self.variables.items()}
        return {
            "webhook_sources": self.provider,
            "per_source": {f"WEBHOOK_SECRET_{name}": self.secret, **variables},
        }


def stamped(header: str, signature: str | None = None) -> dict[str, Tamper]:
    return {
        "body": body_byte,
        "timestamp": header_number(header),
        "signature": header_char(signature or header),
    }


CASES = [
    Case(
        "hmac",
        "hmac-signing-secret-7f3a9c21",
        "order.created",
        hmac_oracle,
        {
            "body": body_byte,
            "timestamp": created_plus_one,
            "signature": header_char("X-Signature-256"),
        },
        without("id", "type", "created"),
    ),
    Case(
        "stripe",
        "whsec_9f2b7c1d4e8a6f3b0c5d2e9a7f1b4c8d",
        "customer.subscription.updated",
        stripe_oracle,
        {
            "body": body_byte,
            "timestamp": header_number("Stripe-Signature", r"t=(\d+)"),
            "signature": header_char("Stripe-Signature"),
        },
        path("data", "object"),
    ),
    Case(
        "github",
        "gh-webhook-secret-6b1f0e9d2c",
        "pull_request",
        github_oracle,
        {"body": body_byte, "signature": header_char("X-Hub-Signature-256")},
        path(),
    ),
    Case(
        "shopify",
        "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",
        "orders/create",
        shopify_oracle,
        {"body": body_byte, "signature": header_char("X-Shopify-Hmac-Sha256")},
        path(),
    ),
    Case(
        "slack",
        "4c1e9b7a2d6f8e3a0b5c9d2e7f1a4b8c",
        "app_mention",
        slack_oracle,
        stamped("X-Slack-Request-Timestamp", "X-Slack-Signature"),
        path("event"),
        expected=lambda data, kind: {**data, "type": kind},
    ),
    Case(
        "paddle",
        "pdl_ntfset_01jd4q2w8x5z7v3m9k6p1r4t8y_Xy7Qw2Ex9Rt4Ub6Ni1Mo3Ps8Lk5Jh2G",
        "subscription.updated",
        paddle_oracle,
        {
            "body": body_byte,
            "timestamp": header_number("Paddle-Signature", r"ts=(\d+)"),
            "signature": header_char("Paddle-Signature"),
        },
        path("data"),
    ),
    Case(
        "standard",
        standard_secret(),
        "invoice.paid",
        standard_oracle,
        {**stamped("webhook-timestamp", "webhook-signature"), "id": header_char("webhook-id")},
        path("data"),
    ),
    Case(
        "gitlab",
        "glwt-token-8d3f1a6c9e2b7d4f",
        "Merge Request Hook",
        gitlab_oracle,
        # GitLab signs nothing: the token is all that is checked (a changed body passes,
        # by GitLab's design).
        {"token": header_char("X-Gitlab-Token")},
        path(),
    ),
    Case(
        "meta",
        "a3f5c7e9b1d2f4a6c8e0b2d4f6a8c0e2",
        "whatsapp_business_account",
        meta_oracle,
        {"body": body_byte, "signature": header_char("X-Hub-Signature-256")},
        path("entry", 0, "changes", 0, "value"),
        variables={"VERIFY_TOKEN": "meta-verify-token-01"},
    ),
    Case(
        "twitch",
        "twitch-s3cret-9d8c7b",
        "channel.follow",
        twitch_oracle,
        {
            "body": body_byte,
            "timestamp": last_digit("Twitch-Eventsub-Message-Timestamp"),
            "signature": header_char("Twitch-Eventsub-Message-Signature"),
            "id": header_char("Twitch-Eventsub-Message-Id"),
        },
        path("event"),
    ),
    Case(
        "zoom",
        "Zq8vN3kLm2Px7Rt5Wy1BcQ",
        "meeting.participant_joined",
        zoom_oracle,
        stamped("x-zm-request-timestamp", "x-zm-signature"),
        path("payload", "object"),
    ),
    Case(
        "woocommerce",
        "wc-secret & more: 4f9a2c7e",
        "order.updated",
        woocommerce_oracle,
        {"body": body_byte, "signature": header_char("X-WC-Webhook-Signature")},
        path(),
    ),
    Case(
        "dropbox",
        "k9x2m7q4w8e3r6t",  # a Dropbox app secret is 15 characters
        "notification",
        dropbox_oracle,
        {"body": body_byte, "signature": header_char("X-Dropbox-Signature")},
        path(),
    ),
    Case(
        "xero",
        base64.b64encode(hashlib.sha512(b"xero-webhooks-key").digest()).decode(),
        "events",
        xero_oracle,
        {"body": body_byte, "signature": header_char("x-xero-signature")},
        path("events", 0),
    ),
]
IDS = [case.provider for case in CASES]
TAMPERED = [(case, name) for case in CASES for name in case.tampers]
DATA = {"reference": "set-by-the-test", "amount": 1234, "tags": ["a", "é"], "nested": {"ok": True}}


def url(provider: str) -> str:
    return f"http://testserver/webhooks/{provider}"


def source_for(provider: str, secret: str) -> SourceConfig:
    return SourceConfig(provider, provider, (SecretStr(secret),), 300, 86400)


def sign(
    provider: str,
    secret: str,
    event_id: str,
    event_type: str,
    data: Any = None,
    timestamp: int | None = None,
    source: SourceConfig | None = None,
) -> SignedRequest:
    event = EventToSign(
        event_id,
        event_type,
        url(provider),
        data,
        int(time.time()) if timestamp is None else timestamp,
    )
    return SIGNERS[provider](source or source_for(provider, secret), event, Keys(secret=secret))


@dataclass
class Setup:
    case: Case
    client: TestClient
    source: SourceConfig

    def sign(self, event_id: str, **extra: Any) -> SignedRequest:
        extra.setdefault("event_type", self.case.event_type)
        return sign(self.case.provider, self.case.secret, event_id, source=self.source, **extra)


def post(client: TestClient, request: SignedRequest) -> Any:
    assert request.method == "POST"
    return client.post(request.url, content=request.body, headers=request.headers)


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


def answered(response: Any, status: str, event_id: str) -> bool:
    return bool(
        response.status_code == 200 and response.json() == {"status": status, "id": event_id}
    )


@pytest.fixture(params=CASES, ids=IDS)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def setup(
    case: Case, make_settings: SettingsFactory, make_client: ClientFactory, redis: Redis
) -> Setup:
    settings = make_settings(**case.config())
    return Setup(case, make_client(settings), settings.sources[case.provider])


# --- 1. accepted, with the announced id, queued with that id and type ----------------------


def test_the_signed_request_is_accepted_and_queued_with_its_id_and_type(
    setup: Setup, redis: Redis
) -> None:
    request = setup.sign("evt-42.a:b")
    assert request.url == url(setup.case.provider)
    response = post(setup.client, request)
    assert answered(response, "accepted", request.event_id), response.text
    [job] = jobs(redis)
    assert (job.meta["source"], job.meta["event_id"], job.meta["type"]) == (
        setup.case.provider,
        request.event_id,
        setup.case.event_type,
    )


def test_an_id_with_outer_spaces_is_announced_as_the_receiver_answers_it(
    setup: Setup, redis: Redis
) -> None:
    # In a header, HTTP drops them on the way; in a body, they stay.
    request = setup.sign(" evt_spaced ")
    response = post(setup.client, request)
    assert answered(response, "accepted", request.event_id), response.text
    [job] = jobs(redis)
    assert job.meta["event_id"] == request.event_id


# --- 2. the same event again is a duplicate, another id a new event -------------------------


def test_the_same_event_again_is_a_duplicate_and_another_id_is_accepted(
    setup: Setup, redis: Redis
) -> None:
    now = int(time.time())
    first = setup.sign("evt_same", timestamp=now)
    assert answered(post(setup.client, first), "accepted", first.event_id)
    assert answered(post(setup.client, first), "duplicate", first.event_id)
    # Signed afresh a second later, as a provider's retry or a second `webhooks send`.
    again = setup.sign("evt_same", timestamp=now + 1)
    assert again.event_id == first.event_id
    response = post(setup.client, again)
    assert answered(response, "duplicate", first.event_id), response.text
    other = setup.sign("evt_other", timestamp=now)
    assert other.event_id != first.event_id
    response = post(setup.client, other)
    assert answered(response, "accepted", other.event_id), response.text
    assert len(jobs(redis)) == 2


# --- 3. any signed byte changed is refused, nothing queued -----------------------------------


@pytest.mark.parametrize(
    ("case", "tamper"), TAMPERED, ids=[f"{c.provider}-{t}" for c, t in TAMPERED]
)
def test_a_changed_signed_byte_is_refused_and_nothing_is_queued(
    case: Case, tamper: str, setup: Setup, redis: Redis
) -> None:
    request = setup.sign("evt_tampered")
    changed = case.tampers[tamper](request)
    assert changed != request
    response = post(setup.client, changed)
    assert response.status_code == 401, response.text
    assert jobs(redis) == []


# --- 4. the provider's SDK, or its documented vector, agrees ----------------------------------


def test_the_providers_sdk_or_documented_vector_agrees(case: Case) -> None:
    request = sign(case.provider, case.secret, "evt_oracle", case.event_type)
    case.assert_agrees(request, case.secret)


# --- 5. event.data is the event object the handler gets -------------------------------------


def test_the_data_replaces_the_event_object_the_handler_gets(setup: Setup, redis: Redis) -> None:
    request = setup.sign("evt_data", data=DATA)
    response = post(setup.client, request)
    assert answered(response, "accepted", request.event_id), response.text
    [job] = jobs(redis)
    call = EventCall.from_args(job.args)
    payload = parse_payload(call.raw, PayloadFormat.JSON)
    assert setup.case.event_object(payload) == setup.case.expected(DATA, setup.case.event_type)
    assert (call.event_id, call.type) == (request.event_id, setup.case.event_type)


# --- 6. where the verifier runs a recipe, the signer signs from that recipe -----------------


@pytest.mark.parametrize("provider", ["stripe", "slack", "paddle", "standard"])
def test_the_signer_follows_a_change_of_its_verifiers_recipe(
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    make_settings: SettingsFactory,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    module = importlib.import_module(f"app.providers.{provider}")
    if provider == "standard":  # one recipe per family of headers; `webhook-*` is sent
        changed = module.RECIPES["webhook"].model_copy(update={"algorithm": Algorithm.SHA512})
        monkeypatch.setitem(module.RECIPES, "webhook", changed)
    else:
        changed = module.RECIPE.model_copy(update={"algorithm": Algorithm.SHA512})
        monkeypatch.setattr(module, "RECIPE", changed)
        monkeypatch.setattr(VERIFIERS[provider], "preset", changed)
    case = next(c for c in CASES if c.provider == provider)
    settings = make_settings(**case.config())
    request = sign(
        provider, case.secret, "evt_changed", case.event_type, source=settings.sources[provider]
    )
    response = post(make_client(settings), request)
    assert answered(response, "accepted", request.event_id), response.text


# --- the envelope's edges ----------------------------------------------------------------------


def test_every_provider_of_the_family_has_a_signer_in_the_registry() -> None:
    assert set(header_hmac.SIGNERS) == set(IDS)
    assert all(SIGNERS[name] is header_hmac.SIGNERS[name] for name in IDS)
    assert set(IDS) <= set(DEFAULT_TYPE)


def test_an_event_without_a_type_gets_the_providers_usual_one(setup: Setup, redis: Redis) -> None:
    request = setup.sign("evt_untyped", event_type="")
    assert answered(post(setup.client, request), "accepted", request.event_id)
    [job] = jobs(redis)
    assert job.meta["type"] == DEFAULT_TYPE[setup.case.provider]


def test_a_missing_secret_is_one_line(case: Case) -> None:
    event = EventToSign("evt_1", case.event_type, url(case.provider))
    with pytest.raises(SigningError) as raised:
        SIGNERS[case.provider](source_for(case.provider, case.secret), event, Keys())
    assert "\n" not in str(raised.value) and "WEBHOOK_SECRET_" in str(raised.value)


@pytest.mark.parametrize(
    "data", [[1, 2], "text", 3, True], ids=["array", "string", "number", "bool"]
)
def test_data_that_is_not_an_object_is_one_line(case: Case, data: Any) -> None:
    with pytest.raises(SigningError) as raised:
        sign(case.provider, case.secret, "evt_1", case.event_type, data)
    assert "\n" not in str(raised.value) and "JSON object" in str(raised.value)


@pytest.mark.parametrize(("provider", "kind"), [("dropbox", "file.changed"), ("xero", "INVOICE")])
def test_a_type_the_provider_never_sends_is_refused(provider: str, kind: str) -> None:
    with pytest.raises(SigningError, match="dispatches every one as"):
        sign(provider, "k9x2m7q4w8e3r6t-0123", "evt_1", kind)


def test_a_standard_secret_that_is_not_whsec_base64_is_one_line() -> None:
    with pytest.raises(SigningError, match="whsec_"):
        sign("standard", "whsec_not base64!", "msg_1", "invoice.paid")


@pytest.mark.parametrize("event_id", ["", "évt", "evt\n1"])
def test_an_id_that_cannot_travel_in_a_header_is_one_line(event_id: str) -> None:
    with pytest.raises(SigningError, match="X-GitHub-Delivery"):
        sign("github", "gh-webhook-secret-6b1f0e9d2c", event_id, "push")


@pytest.mark.parametrize(
    ("provider", "kind", "answer"),
    [
        ("slack", "url_verification", lambda body: {"challenge": body["challenge"]}),
        ("zoom", "endpoint.url_validation", None),
    ],
    ids=["slack", "zoom"],
)
def test_a_url_check_is_answered_and_queues_nothing(
    provider: str,
    kind: str,
    answer: Callable[[Any], Any] | None,
    make_settings: SettingsFactory,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    case = next(c for c in CASES if c.provider == provider)
    settings = make_settings(**case.config())
    request = sign(provider, case.secret, "evt_check", kind, source=settings.sources[provider])
    assert request.event_id == ""
    response = post(make_client(settings), request)
    assert response.status_code == 200, response.text
    body = parse_payload(request.body, PayloadFormat.JSON)
    if answer is not None:
        assert response.json() == answer(body)
    else:  # Zoom: the token back, with its HMAC under the same secret
        plain = body["payload"]["plainToken"]
        encrypted = openssl(case.secret, plain.encode()).hex()
        assert response.json() == {"plainToken": plain, "encryptedToken": encrypted}
    assert jobs(redis) == []


def test_digest_bodies_hold_no_clock_and_follow_the_event_id() -> None:
    for provider, kind in (
        ("meta", "page"),
        ("zoom", "meeting.started"),
        ("dropbox", ""),
        ("xero", ""),
    ):
        secret = "digest-provider-secret-01"
        early = sign(provider, secret, "evt_a", kind, timestamp=1_700_000_000)
        late = sign(provider, secret, "evt_a", kind, timestamp=1_800_000_000)
        other = sign(provider, secret, "evt_b", kind, timestamp=1_700_000_000)
        assert early.body == late.body and early.event_id == late.event_id, provider
        assert other.event_id != early.event_id, provider
        digest = "sha256:" + hashlib.sha256(early.body).hexdigest()
        assert early.event_id == digest, provider


def test_a_gitlab_token_that_cannot_be_a_header_is_refused_without_repeating_it() -> None:
    with pytest.raises(SigningError, match="X-Gitlab-Token") as raised:
        sign("gitlab", "jeton-secret-de-l'équipe", "evt_1", "Push Hook")
    assert "équipe" not in str(raised.value)


def test_hmac_keeps_the_datas_own_type_when_no_type_is_given() -> None:
    request = sign("hmac", "s" * 32, "evt_t1", "", data={"type": "invoice.paid", "total": 5})
    body = json.loads(request.body)
    assert (body["type"], body["total"]) == ("invoice.paid", 5)


def test_hmac_refuses_a_type_given_that_differs_from_the_datas_own_naming_both() -> None:
    with pytest.raises(SigningError) as refused:
        sign("hmac", "s" * 32, "evt_t2", "order.created", data={"type": "invoice.paid"})
    assert str(refused.value) == (
        "hmac: the data has its own type, 'invoice.paid', and the type given is "
        "'order.created': give the same type, or none"
    )
    same = sign("hmac", "s" * 32, "evt_t3", "invoice.paid", data={"type": "invoice.paid"})
    assert json.loads(same.body)["type"] == "invoice.paid"
