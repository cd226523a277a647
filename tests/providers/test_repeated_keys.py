"""Where the signature, or what it signs, is read from inside the body (SNS, Mailgun,
Braintree), a body that repeats a key is refused, from the attacker's side.

The verifier reads one of the values (Python keeps the last) while a handler's parser may
read another (many keep the first, and form payloads reach handlers as a list). So a
correctly signed body with a forged twin of a signed key is a 400, and nothing is queued.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


def post(make_client: ClientFactory, provider: str, key: s.Key, body: bytes, headers: Any) -> Any:
    client = make_client(**BY_NAME[provider].config(key))
    return client.post(f"/webhooks/{provider}", content=body, headers=headers)


def with_twin_first(body: bytes, key: str, value: object) -> bytes:
    """The JSON object `body` with `key` also set to `value`, before the signed one."""
    assert body.startswith(b"{")
    return b"{" + json.dumps(key).encode() + b": " + json.dumps(value).encode() + b", " + body[1:]


@pytest.mark.parametrize("repeated", ["Message", "MessageId", "Type"])
def test_a_signed_sns_message_that_repeats_a_signed_key_is_400(
    repeated: str, make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("k")
    signed = s.sign_sns(key, "m-1", int(time.time()))
    forged = {"Message": '{"order": 666}', "MessageId": "m-forged", "Type": "Notification"}
    body = with_twin_first(signed.body, repeated, forged[repeated])
    response = post(make_client, "sns", key, body, signed.headers)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


def test_a_signed_mailgun_body_that_repeats_its_signature_object_is_400(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    signed = s.sign_mailgun(key, "evt-1", int(time.time()))
    other = {"timestamp": "1", "token": "t-forged", "signature": "0" * 64}
    body = with_twin_first(signed.body, "signature", other)
    response = post(make_client, "mailgun", key, body, signed.headers)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


def test_a_signed_mailgun_body_that_repeats_a_key_inside_its_signature_is_400(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    signed = s.sign_mailgun(key, "evt-1", int(time.time()))
    body = signed.body.replace(b'"signature": {', b'"signature": {"token": "t-forged", ', 1)
    response = post(make_client, "mailgun", key, body, signed.headers)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


def mailgun_form(key: s.Key, token: str) -> list[tuple[str, str]]:
    ts = str(int(time.time()))
    signature = s.hex_hmac(key.secret, f"{ts}{token}".encode())
    return [("timestamp", ts), ("token", token), ("signature", signature), ("event", "opened")]


@pytest.mark.parametrize("repeated", ["timestamp", "token", "signature"])
def test_a_signed_mailgun_form_that_repeats_a_signed_field_is_400(
    repeated: str, make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plain_key("k")
    fields = mailgun_form(key, "t" * 50)
    twin = {"timestamp": "1", "token": "t-forged", "signature": "0" * 64}[repeated]
    body = urlencode([(repeated, twin), *fields]).encode()
    response = post(make_client, "mailgun", key, body, FORM)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


@pytest.mark.parametrize("repeated", ["bt_payload", "bt_signature"])
def test_a_signed_braintree_form_that_repeats_a_field_is_400(
    repeated: str, make_client: ClientFactory, redis: Redis
) -> None:
    key = s.braintree_key("k")
    signed = s.sign_braintree(key, "sub_1", int(time.time()))
    twin = {"bt_payload": "Zm9yZ2Vk", "bt_signature": f"{key.material.config.public_key}|00"}
    body = urlencode({repeated: twin[repeated]}).encode() + b"&" + signed.body
    response = post(make_client, "braintree", key, body, signed.headers)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []
