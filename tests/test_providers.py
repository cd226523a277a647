"""Every provider verifies exactly as it documents, through the HTTP app and a real Redis."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from slack_sdk.signature import SignatureVerifier

from app.errors import InvalidPayload, InvalidSignature
from app.providers.github import GitHubVerifier
from app.settings import ConfigError, SourceConfig
from tests.signers import CASES, TIMESTAMPED, Case, Signed
from workers import Event, handler

ClientFactory = Callable[..., TestClient]


def post(client: TestClient, case: Case, signed: Signed) -> Any:
    return client.post(f"/webhooks/{case.name}", content=signed.body, headers=signed.headers)


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


def test_a_request_signed_by_the_provider_sdk_is_accepted_with_its_id_and_type(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    response = post(client, case, case.signed(secret, "evt-42.a:b"))
    assert (response.status_code, response.json()) == (
        200,
        {"status": "accepted", "id": "evt-42.a:b"},
    )
    [job] = jobs(redis)
    assert (job.meta["source"], job.meta["event_id"], job.meta["type"]) == (
        case.name,
        "evt-42.a:b",
        case.event_type,
    )


def test_a_one_byte_change_is_rejected(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    secret = case.make_secret("k1")
    signed = case.signed(secret)
    tampered = Signed(signed.body[:-2] + b" }", signed.headers)
    assert post(make_client(**case.settings(secret)), case, tampered).status_code == 401
    assert jobs(redis) == []


def test_a_request_signed_with_another_secret_is_rejected(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    client = make_client(**case.settings(case.make_secret("k1")))
    assert post(client, case, case.signed(case.make_secret("other"))).status_code == 401


def test_old_and_new_secrets_are_both_accepted_during_rotation(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    old, new = case.make_secret("old"), case.make_secret("new")
    client = make_client(**case.settings(old, new))
    assert post(client, case, case.signed(old, "evt_old")).json()["status"] == "accepted"
    assert post(client, case, case.signed(new, "evt_new")).json()["status"] == "accepted"


def test_a_redelivery_is_a_duplicate(case: Case, make_client: ClientFactory, redis: Redis) -> None:
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    post(client, case, case.signed(secret))
    # A retry is signed afresh (new timestamp) but carries the same event id.
    again = post(client, case, case.signed(secret, ts=int(time.time()) + 1))
    assert again.json() == {"status": "duplicate", "id": "evt_1"}


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_a_timestamp_older_than_the_tolerance_is_400(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret, replay_tolerance=60))
    response = post(client, case, case.signed(secret, ts=int(time.time()) - 120))
    assert response.status_code == 400
    assert jobs(redis) == []


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_a_future_timestamp_follows_the_provider_rule(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret, replay_tolerance=60))
    response = post(client, case, case.signed(secret, ts=int(time.time()) + 120))
    # Stripe's rule is one-sided (its SDK only refuses old timestamps); the others two-sided.
    assert response.status_code == (400 if case.future_refused else 200)


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_the_per_source_tolerance_overrides_the_default(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    secret = case.make_secret("k1")
    settings = case.settings(secret, replay_tolerance=60)
    settings["per_source"][f"REPLAY_TOLERANCE_{case.name.upper()}"] = "600"
    response = post(make_client(**settings), case, case.signed(secret, ts=int(time.time()) - 120))
    assert response.status_code == 200


def test_the_github_published_test_vector_verifies() -> None:
    from pydantic import SecretStr

    verifier = GitHubVerifier(
        SourceConfig("github", "github", (SecretStr("It's a Secret to Everybody"),), 300, 1)
    )
    signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    headers = {"x-hub-signature-256": signature, "x-github-delivery": "d1"}
    # The vector's body is not JSON, so passing the signature check ends at the payload check.
    with pytest.raises(InvalidPayload):
        verifier.verify(b"Hello, World!", headers, time.time())
    with pytest.raises(InvalidSignature):
        verifier.verify(b"Hello, World?", headers, time.time())


MALFORMED: dict[str, list[dict[str, str]]] = {
    "stripe": [
        {"Stripe-Signature": v}
        for v in (
            "",
            "garbage",
            "t=abc,v1=" + "a" * 64,
            "v1=" + "a" * 64,
            "t=1,v1=zz",
            "t=1",
            "t=1,,v1=ab",
            "t=1,t=2,v1=" + "a" * 64,
            "t=,v1=",
            "t=1e9,v1=" + "a" * 64,
        )
    ],
    "github": [
        {"X-Hub-Signature-256": v, "X-GitHub-Delivery": "d"}
        for v in ("", "sha256", "sha1=" + "a" * 40, "sha256=xyz", "sha256=" + "a" * 63, "a" * 64)
    ],
    "shopify": [
        {"X-Shopify-Hmac-Sha256": v, "X-Shopify-Event-Id": "e"}
        for v in ("", "!!!!", "abc", "a" * 44, "=" * 44, "YWJj")
    ],
    "slack": [
        {"X-Slack-Signature": "v0=" + "a" * 64, "X-Slack-Request-Timestamp": "soon"},
        {"X-Slack-Signature": "v0=" + "a" * 64, "X-Slack-Request-Timestamp": "-5"},
        {"X-Slack-Signature": "v1=" + "a" * 64, "X-Slack-Request-Timestamp": "1"},
        {"X-Slack-Signature": "v0=nothex", "X-Slack-Request-Timestamp": "1"},
        {"X-Slack-Signature": "v0=" + "a" * 64},
    ],
    "paddle": [
        {"Paddle-Signature": v}
        for v in (
            "",
            "ts=1",
            "ts=x;h1=" + "a" * 64,
            "h1=" + "a" * 64,
            "ts=1;h1=zz",
            "ts=1,h1=ab",
            "ts=1;h2=" + "a" * 64,
        )
    ],
    "standard": [
        {"webhook-id": "m", "webhook-timestamp": "1", "webhook-signature": "v1,!!!"},
        {"webhook-id": "m", "webhook-timestamp": "x", "webhook-signature": "v1,YWJj"},
        {"webhook-id": "m", "webhook-timestamp": "1", "webhook-signature": "v2,YWJj"},
        {"webhook-id": "m", "webhook-timestamp": "1", "webhook-signature": "nocomma"},
        {"webhook-id": "m", "webhook-signature": "v1,YWJj"},
        {"svix-id": "m", "svix-timestamp": "1", "svix-signature": ""},
    ],
}


@pytest.mark.parametrize(
    ("provider", "headers"),
    [(p, h) for p, hs in MALFORMED.items() for h in hs],
)
def test_malformed_signature_headers_are_401(
    provider: str, headers: dict[str, str], make_client: ClientFactory, redis: Redis
) -> None:
    case = next(c for c in CASES if c.provider == provider)
    client = make_client(**case.settings(case.make_secret("k1")))
    response = client.post(f"/webhooks/{case.name}", content=b'{"id": "e"}', headers=headers)
    assert response.status_code == 401, response.text


def test_slack_url_verification_is_answered_with_the_challenge_and_enqueues_nothing(
    make_client: ClientFactory, redis: Redis
) -> None:
    client = make_client(
        webhook_sources="slack", per_source={"WEBHOOK_SECRET_SLACK": "slack-signing-secret-01"}
    )
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    body = json.dumps({"token": "t", "challenge": challenge, "type": "url_verification"})
    ts = str(int(time.time()))
    headers = {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier("slack-signing-secret-01").generate_signature(
            timestamp=ts, body=body
        ),
    }
    response = client.post("/webhooks/slack", content=body, headers=headers)
    assert (response.status_code, response.json()) == (200, {"challenge": challenge})
    assert jobs(redis) == [] and redis.keys("webhook:*") == []
    unsigned = client.post(
        "/webhooks/slack", content=body, headers={**headers, "X-Slack-Signature": "v0=" + "0" * 64}
    )
    assert unsigned.status_code == 401


@pytest.mark.parametrize(
    ("provider", "expected", "absent"),
    [
        (
            "github",
            {
                "x-github-delivery": "evt_1",
                "x-github-event": "pull_request",
                "x-github-hook-id": "42",
            },
            "x-hub-signature-256",
        ),
        (
            "shopify",
            {
                "x-shopify-topic": "orders/create",
                "x-shopify-event-id": "evt_1",
                "x-shopify-shop-domain": "shop.myshopify.com",
            },
            "x-shopify-hmac-sha256",
        ),
        (
            "slack",
            {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"},
            "x-slack-signature",
        ),
        ("standard", {"webhook-id": "evt_1"}, "webhook-signature"),
    ],
)
def test_handlers_get_the_provider_headers_but_never_the_signature(
    provider: str,
    expected: dict[str, str],
    absent: str,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    case = next(c for c in CASES if c.name == provider)
    secret = case.make_secret("k1")
    post(make_client(**case.settings(secret)), case, case.signed(secret))
    [job] = jobs(redis)
    headers = job.args[4]
    assert expected.items() <= headers.items() and absent not in headers


def test_a_standard_webhooks_secret_that_is_not_base64_stops_startup(
    make_client: ClientFactory,
) -> None:
    case = next(c for c in CASES if c.name == "standard")
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET_STANDARD"):
        make_client(**case.settings("whsec_not*base64!"))


def test_an_unpadded_standard_webhooks_secret_is_accepted_as_the_official_library_accepts_it(
    make_client: ClientFactory, redis: Redis
) -> None:
    import standardwebhooks

    case = next(c for c in CASES if c.name == "standard")
    secret = "whsec_" + base64.b64encode(b"k" * 25).decode().rstrip("=")  # 25 bytes: padded
    assert not secret.endswith("=")
    client = make_client(**case.settings(secret))
    body = b'{"type": "user.created", "data": {}}'
    stamp = datetime.now(UTC)
    signature = standardwebhooks.Webhook(secret).sign("msg_unpadded", stamp, body.decode())
    headers = {
        "webhook-id": "msg_unpadded",
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": signature,
    }
    response = client.post("/webhooks/standard", content=body, headers=headers)
    assert response.json() == {"status": "accepted", "id": "msg_unpadded"}


@pytest.mark.parametrize(
    ("name", "id_header"), [("github", "X-GitHub-Delivery"), ("shopify", "X-Shopify-Event-Id")]
)
def test_a_captured_request_resent_under_a_fresh_unsigned_id_is_a_duplicate(
    name: str, id_header: str, make_client: ClientFactory, redis: Redis
) -> None:
    # The attacker's side: the signature covers the body only, so the id header is theirs
    # to change; the signed bytes are claimed too, for the source's dedupe window.
    case = next(c for c in CASES if c.name == name)
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    captured = case.signed(secret, "evt-original")
    assert post(client, case, captured).json()["status"] == "accepted"
    for fresh in ("evt-forged-1", "evt-forged-2"):
        replayed = Signed(captured.body, {**captured.headers, id_header: fresh})
        response = post(client, case, replayed)
        assert (response.status_code, response.json()["status"]) == (200, "duplicate")
    assert [job.meta["event_id"] for job in jobs(redis)] == ["evt-original"]


def test_a_different_body_under_an_unsigned_id_is_still_its_own_event(
    make_client: ClientFactory, redis: Redis
) -> None:
    case = next(c for c in CASES if c.name == "github")
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    first = case.signed(secret, "evt-1")
    body = first.body.replace(b"opened", b"closed")
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    other = Signed(
        body, {**first.headers, "X-GitHub-Delivery": "evt-2", "X-Hub-Signature-256": signature}
    )
    assert post(client, case, first).json()["status"] == "accepted"
    assert post(client, case, other).json()["status"] == "accepted"
    assert sorted(job.meta["event_id"] for job in jobs(redis)) == ["evt-1", "evt-2"]


def test_github_form_encoded_payloads_are_refused_with_a_hint(
    make_client: ClientFactory, redis: Redis
) -> None:
    case = next(c for c in CASES if c.name == "github")
    secret = case.make_secret("k1")
    signed = case.signed(secret)
    headers = {**signed.headers, "Content-Type": "application/x-www-form-urlencoded"}
    response = make_client(**case.settings(secret)).post(
        "/webhooks/github", content=signed.body, headers=headers
    )
    assert response.status_code == 400 and "application/json" in response.json()["detail"]


def test_each_provider_event_type_reaches_its_handler_through_the_worker(
    make_settings: Callable[..., Any],
    make_client: ClientFactory,
    redis: Redis,
    run_worker: Callable[..., Any],
) -> None:
    sources = [c for c in CASES if c.name in ("github", "shopify", "slack", "stripe")]
    per_source = {f"WEBHOOK_SECRET_{c.name.upper()}": c.make_secret("k") for c in sources}
    settings = make_settings(
        webhook_sources=",".join(f"{c.name}:{c.provider}" for c in sources), per_source=per_source
    )
    url = settings.redis_url

    def hit(event: Event) -> None:
        Redis.from_url(url).rpush("hits", f"{event.source}/{event.type}/{event.id}")

    for c in sources:
        handler(c.name, c.event_type)(hit)
        handler(c.name, "never.sent")(lambda e: Redis.from_url(url).rpush("hits", "wrong"))
    client = make_client(settings)
    for c in sources:
        assert post(client, c, c.signed(c.make_secret("k"), f"id-{c.name}")).status_code == 200
        post(client, c, c.signed(c.make_secret("k"), f"other-{c.name}", event_type="other.type"))
    run_worker(settings)
    assert sorted(x.decode() for x in redis.lrange("hits", 0, -1)) == sorted(
        f"{c.name}/{c.event_type}/id-{c.name}" for c in sources
    )
