"""Twilio signs the URL it called, which the receiver rebuilds from the request's Host
header: the sender's bytes. Only the URL as sent, and its spelling with or without the
scheme's default port, are tried; a Host with another port, user info or a port that is
no number never turns a signature made for another URL into an acceptance, nor into a
500."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from twilio.request_validator import RequestValidator

from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]
KEY = s.plain_key("k")
PARAMS = {"MessageSid": "SM1", "MessageStatus": "delivered"}
PATH = "/webhooks/twilio?tenant=eu"


def post_as(make_client: ClientFactory, host: str, signed_url: str) -> Any:
    """A form signed for `signed_url`, sent with this Host header."""
    headers = {
        "Host": host,
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Twilio-Signature": RequestValidator(KEY.secret).compute_signature(signed_url, PARAMS),
    }
    client = make_client(**BY_NAME["twilio"].config(KEY))
    return client.post(PATH, content=urlencode(PARAMS).encode(), headers=headers)


def queued(redis: Redis) -> int:
    return len(Queue("webhooks", connection=redis).get_jobs())


@pytest.mark.parametrize(
    "signed_url",
    ["http://testserver:8080" + PATH, "http://testserver:80" + PATH, "http://testserver" + PATH],
)
def test_on_another_port_only_the_url_as_sent_verifies(
    signed_url: str, make_client: ClientFactory, redis: Redis
) -> None:
    # Twilio's SDK would also try the URL without :8080, which is another endpoint: a
    # signature Twilio made for the service on the default port. We do not.
    response = post_as(make_client, "testserver:8080", signed_url)
    sent_as_signed = signed_url == "http://testserver:8080" + PATH
    assert response.status_code == (200 if sent_as_signed else 401), response.text
    assert queued(redis) == (1 if sent_as_signed else 0)


@pytest.mark.parametrize("host", ["testserver:http", "testserver:99999"])
def test_a_host_whose_port_is_no_port_is_401_not_500(
    host: str, make_client: ClientFactory, redis: Redis
) -> None:
    response = post_as(make_client, host, "http://testserver" + PATH)
    assert response.status_code == 401, response.text
    assert response.json()["detail"] == "signature does not match"
    assert queued(redis) == 0


def test_a_host_with_user_info_verifies_only_as_sent_as_twilios_sdk_does(
    make_client: ClientFactory, redis: Redis
) -> None:
    host, signed_url = "user@testserver:80", "http://testserver" + PATH
    signature = RequestValidator(KEY.secret).compute_signature(signed_url, PARAMS)
    # The oracle: Twilio's own validator, given the URL as sent.
    assert not RequestValidator(KEY.secret).validate(f"http://{host}{PATH}", PARAMS, signature)
    response = post_as(make_client, host, signed_url)
    assert response.status_code == 401, response.text
    assert queued(redis) == 0
    accepted = post_as(make_client, host, f"http://{host}{PATH}")
    assert accepted.status_code == 200, accepted.text
