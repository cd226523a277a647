"""What a recipe reads from a request, through the app: a signed string with text after
its last placeholder, a signed timestamp that is no number, a body timestamp in ISO 8601
(with or without its offset) and ids inside arrays. Each is what the sender's bytes can
hold; the answer is the status a provider sees, and nothing is queued when refused."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from redis import Redis
from rq import Queue

from app.errors import InvalidSignature
from app.keyfetch import KeyFetcher
from app.providers import Inbound, verifier_for
from app.settings import SourceConfig

ClientFactory = Callable[..., TestClient]
SECRET = "recipe-secret-0123456789"


def acme(make_client: ClientFactory, **recipe: Any) -> TestClient:
    recipe = {"signature_header": "X-Sig", **recipe}
    per_source = {"WEBHOOK_SECRET_ACME": SECRET, "WEBHOOK_RECIPE_ACME": json.dumps(recipe)}
    return make_client(webhook_sources="acme:recipe", per_source=per_source)


def signature(message: bytes) -> str:
    return hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()


def post(client: TestClient, body: bytes, signed: bytes | None = None, **headers: str) -> Any:
    """`body`, with the signature of `signed` (else of the body) and `X_Name` headers."""
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    sent["X-Sig"] = signature(body if signed is None else signed)
    return client.post("/webhooks/acme", content=body, headers=sent)


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


def test_text_after_the_last_placeholder_is_signed_too(
    make_client: ClientFactory, redis: Redis
) -> None:
    client = acme(make_client, signed="{body}\n--end", id="digest")
    body = b'{"n": 1}'
    assert post(client, body, signed=body).status_code == 401
    assert post(client, body, signed=body + b"\n--end").status_code == 200
    assert len(jobs(redis)) == 1


STAMPED = {"signed": "{timestamp}.{body}", "timestamp": "header:X-Ts", "id": "digest"}


@pytest.mark.parametrize("stamp", ["soon", "1e9", "-17", "12345678901234567"])
def test_a_signed_timestamp_that_is_no_number_is_401(
    stamp: str, make_client: ClientFactory, redis: Redis
) -> None:
    # Signed as sent, so only its form is wrong: a sender with the key wrote it so.
    body = b"{}"
    response = post(acme(make_client, **STAMPED), body, f"{stamp}.".encode() + body, X_Ts=stamp)
    assert response.status_code == 401, response.text
    assert response.json()["detail"] == "malformed signature timestamp"
    assert jobs(redis) == []


def test_a_signed_timestamp_of_superscript_digits_is_refused_not_a_crash() -> None:
    # '¹²' is digits to str.isdigit() and a header can carry it (one Latin-1 byte each),
    # but int() refuses it. In process: the test client re-encodes such bytes as UTF-8.
    source = SourceConfig(
        "acme",
        "recipe",
        (SecretStr(SECRET),),
        300,
        86400,
        variables={"WEBHOOK_RECIPE_": json.dumps({"signature_header": "X-Sig", **STAMPED})},
    )
    verifier = verifier_for(source, KeyFetcher([], 1.0))
    stamp, body = "\u00b9\u00b2", b"{}"
    headers = {"x-ts": stamp, "x-sig": signature(f"{stamp}.".encode() + body)}
    with pytest.raises(InvalidSignature, match=r"^malformed signature timestamp$"):
        verifier.check(Inbound("POST", "", "", headers, body, time.time()))


@pytest.fixture
def clock_far_from_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local time zone is UTC+5:30 for the test (POSIX TZ, no tz data)."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("clock_far_from_utc")
@pytest.mark.parametrize("spelling", ["%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S"])
def test_an_iso_8601_body_timestamp_is_utc_unless_it_says_otherwise(
    spelling: str, make_client: ClientFactory, redis: Redis
) -> None:
    client = acme(
        make_client, timestamp="json:sent_at", timestamp_unit="iso8601", tolerance=60, id="json:id"
    )
    now = datetime.now(UTC)
    fresh = json.dumps({"id": "e-1", "sent_at": now.strftime(spelling)}).encode()
    assert post(client, fresh).status_code == 200
    old = now.replace(year=now.year - 1)
    stale = json.dumps({"id": "e-2", "sent_at": old.strftime(spelling)}).encode()
    response = post(client, stale)
    assert response.status_code == 400, response.text
    assert [job.meta["event_id"] for job in jobs(redis)] == ["e-1"]


def test_an_event_id_and_type_inside_an_array(make_client: ClientFactory, redis: Redis) -> None:
    client = acme(make_client, id="json:events.0.id", type="json:events.0.type")
    body = b'{"events": [{"id": "e-1", "type": "item.created"}, {"id": "e-2"}]}'
    assert post(client, body).json() == {"status": "accepted", "id": "e-1"}
    [job] = jobs(redis)
    assert job.meta["type"] == "item.created"
    # An index past the end is no id: refused as a payload without one, not a 500.
    empty = post(client, b'{"events": []}')
    assert (empty.status_code, empty.json()["detail"]) == (400, "no event id: json:events.0.id")
    assert len(jobs(redis)) == 1
