"""A key server's answer that is not a usable key, from the sender's side: SNS's
certificate host and Plaid's key endpoint are fetched over the network, so what they
answer is read as untrusted bytes. An answer that is not the key the scheme needs (an
SNS certificate that is not RSA, a Plaid JWK off P-256 or without its coordinates) is a
503 (retry later, as for a key server that is down), never a 500, and nothing is queued.
The key servers are the local fakes of `fake_keys`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from fastapi.testclient import TestClient
from redis import Redis

from tests.providers import fake_keys
from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]
UNREADABLE = "the fetched key or certificate could not be read"


def nothing_queued(redis: Redis) -> bool:
    return redis.keys("rq:job:*") == [] and redis.keys("webhook:seen:*") == []


def test_an_sns_certificate_that_is_not_rsa_is_503_and_nothing_is_queued(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("ec-certificate")
    # The message is signed with the RSA key, but its certificate URL serves an EC one.
    path = "/" + key.material.url.split("/", 3)[3]
    served = fake_keys.STATE.certificates[path]
    # Its key is EC, not RSA.
    fake_keys.STATE.certificates[path] = fake_keys.sns_certificate_pem(
        ec.generate_private_key(ec.SECP256R1())
    )
    try:
        client = make_client(**BY_NAME["sns"].config(key))
        signed = s.sign_sns(key, "m-ec", int(time.time()))
        response = client.post("/webhooks/sns", content=signed.body, headers=signed.headers)
    finally:
        fake_keys.STATE.certificates[path] = served
    assert response.status_code == 503, response.text
    assert response.json()["detail"] == UNREADABLE
    assert nothing_queued(redis)


def without(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda jwk: {k: v for k, v in jwk.items() if k != name}


def changed(**values: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda jwk: {**jwk, **values}


JWKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "p-384": changed(crv="P-384"),
    "rsa": changed(kty="RSA"),
    "no x": without("x"),
    "y not base64url": changed(y="a"),
    "expired_at as text": changed(expired_at="2030-01-01"),
    "expired_at as a list": changed(expired_at=[1]),
    "expired_at as true": changed(expired_at=True),
}


@pytest.mark.parametrize(("name", "change"), JWKS.items(), ids=JWKS.keys())
def test_a_plaid_key_that_is_not_a_p256_jwk_is_503_and_nothing_is_queued(
    name: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    # A key of its own per case: the fake serves each key id its own (changed) JWK.
    key = s.plaid_key("jwk-" + name.replace(" ", "-"))
    kid = key.material.kid
    fake_keys.STATE.jwks[kid] = change(fake_keys.STATE.jwks[kid])
    client = make_client(**BY_NAME["plaid"].config(key))
    signed = s.sign_plaid(key, "item-1", int(time.time()))
    response = client.post("/webhooks/plaid", content=signed.body, headers=signed.headers)
    assert response.status_code == 503, response.text
    assert response.json()["detail"] == UNREADABLE
    assert nothing_queued(redis)
