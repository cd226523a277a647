"""Every provider, through the HTTP app and a real Redis: what it signs is accepted once,
then a duplicate; anything changed, stale or malformed is refused, never a 500."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.providers import VERIFIERS
from app.providers.base import Verifier
from tests.providers.cases import CASES, TIMESTAMPED, Case
from tests.providers.signing import Request

ClientFactory = Callable[..., TestClient]


def post(client: TestClient, case: Case, request: Request) -> Any:
    path = f"/webhooks/{case.name}" + (f"?{request.query}" if request.query else "")
    return client.post(path, content=request.body, headers=request.headers)


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


def accepted(case: Case, response: Any, event_id: str, status: str = "accepted") -> bool:
    if response.status_code != 200:
        return False
    if case.ack is not None:
        return bool(response.content == case.ack)
    return bool(response.json() == {"status": status, "id": event_id})


def test_a_signed_request_is_accepted_with_its_id_and_type(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    signed = case.signed(key, "evt-42.a:b")
    response = post(make_client(**case.config(key)), case, signed)
    assert accepted(case, response, signed.event_id), response.text
    [job] = jobs(redis)
    assert (job.meta["source"], job.meta["event_id"], job.meta["type"]) == (
        case.name,
        signed.event_id,
        case.event_type,
    )


def test_a_redelivery_is_a_duplicate(case: Case, make_client: ClientFactory, redis: Redis) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    signed = case.signed(key)
    assert accepted(case, post(client, case, signed), signed.event_id)
    again = post(client, case, signed)
    assert accepted(case, again, signed.event_id, "duplicate"), again.text
    if case.timestamped:  # a retry signed afresh carries the same event id
        later = post(client, case, case.signed(key, ts=int(time.time()) + 1))
        assert accepted(case, later, signed.event_id, "duplicate"), later.text
    assert len(jobs(redis)) == 1


def test_a_one_byte_change_is_401(case: Case, make_client: ClientFactory, redis: Redis) -> None:
    key = case.make_key("k1")
    tampered = case.tamper(case.signed(key))
    response = post(make_client(**case.config(key)), case, tampered)
    assert response.status_code == 401, response.text
    assert jobs(redis) == []


SHARED_KEY = [c for c in CASES if c.name not in ("sns", "plaid")]


@pytest.mark.parametrize("case", SHARED_KEY, ids=[c.name for c in SHARED_KEY])
def test_a_request_signed_with_another_key_is_401(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    # SNS and Plaid name the key that verifies them: their own tests cover foreign keys.
    client = make_client(**case.config(case.make_key("k1")))
    response = post(client, case, case.signed(case.make_key("other")))
    assert response.status_code == 401, response.text


def test_old_and_new_keys_are_both_accepted_during_rotation(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    old, new = case.make_key("old"), case.make_key("new")
    client = make_client(**case.config(old, new))
    for key, event_id in ((old, "evt_old"), (new, "evt_new")):
        signed = case.signed(key, event_id)
        assert accepted(case, post(client, case, signed), signed.event_id)


def tolerance(case: Case, seconds: int) -> dict[str, dict[str, str]]:
    return {"per_source": {f"REPLAY_TOLERANCE_{case.name.upper()}": str(seconds)}}


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_a_timestamp_older_than_the_tolerance_is_400(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key, **tolerance(case, 60)))
    response = post(client, case, case.signed(key, ts=int(time.time()) - 120))
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_the_default_tolerance_applies_unless_the_provider_documents_its_own_window(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key, replay_tolerance=60))
    response = post(client, case, case.signed(key, ts=int(time.time()) - 120))
    # A documented window (longer than 120 s for every such provider) beats the default.
    assert response.status_code == (200 if case.own_window else 400), response.text


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_a_timestamp_far_in_the_future_follows_the_provider_rule(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key, **tolerance(case, 60)))
    response = post(client, case, case.signed(key, ts=int(time.time()) + 120))
    # Stripe's rule is one-sided (its SDK only refuses old timestamps); the others two-sided.
    assert response.status_code == (400 if case.future_refused else 200), response.text


@pytest.mark.parametrize("case", TIMESTAMPED, ids=[c.name for c in TIMESTAMPED])
def test_the_per_source_tolerance_overrides_the_default(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key, replay_tolerance=60, **tolerance(case, 600)))
    signed = case.signed(key, ts=int(time.time()) - 120)
    assert accepted(case, post(client, case, signed), signed.event_id)


MALFORMED = [(c, h) for c in CASES for h in c.malformed]


@pytest.mark.parametrize(
    ("case", "headers"), MALFORMED, ids=[f"{c.name}-{i}" for i, (c, _) in enumerate(MALFORMED)]
)
def test_malformed_signature_headers_are_401(
    case: Case, headers: dict[str, str], make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    signed = case.signed(key)
    # The signed body, so only the headers are wrong; as bytes, as they come off the wire.
    raw = {name: value.encode("latin-1") for name, value in headers.items()}
    response = make_client(**case.config(key)).post(
        f"/webhooks/{case.name}", content=signed.body, headers=raw
    )
    assert response.status_code == 401, response.text
    assert jobs(redis) == []


# Mailgun, Adyen, Braintree and SNS sign inside the body: the tampered-body test covers them.
HEADER_SIGNED = [c for c in CASES if c.name not in ("mailgun", "adyen", "braintree", "sns")]


@pytest.mark.parametrize("case", HEADER_SIGNED, ids=[c.name for c in HEADER_SIGNED])
def test_a_request_without_any_signature_is_401(
    case: Case, make_client: ClientFactory, redis: Redis
) -> None:
    key = case.make_key("k1")
    signed = case.signed(key)
    kept = {"Content-Type": signed.headers.get("Content-Type", "application/json")}
    response = make_client(**case.config(key)).post(
        f"/webhooks/{case.name}", content=signed.body, headers=kept
    )
    assert response.status_code == 401, response.text


def test_every_verifier_implements_the_entry_point_it_is_called_by() -> None:
    # So `Verifier`'s own `verify` and `check_async` (which raise or defer) run for none.
    for name, cls in VERIFIERS.items():
        if cls.fetches_keys:
            assert cls.check_async is not Verifier.check_async, name
        else:
            assert cls.verify is not Verifier.verify or cls.check is not Verifier.check, name
