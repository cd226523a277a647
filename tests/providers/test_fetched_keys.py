"""AWS SNS and Plaid name the key that verifies them: it is fetched only from allowed
origins, within a timeout, once (cached); a failed fetch is a 503, never a 500 and never
an acceptance. The key servers are local fakes (`fake_keys`)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import jwt
import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.keyfetch import Fetch, KeyFetcher, KeyRefused, KeyUnavailable
from app.providers.sns import is_certificate_url, load_certificate_key, string_to_sign
from app.settings import DEFAULT_FETCH_ALLOW, ConfigError
from tests.providers import fake_keys
from tests.providers import signing as s
from tests.providers.cases import BY_NAME, FETCH_ALLOW_LOCAL

ClientFactory = Callable[..., TestClient]
SNS, PLAID = BY_NAME["sns"], BY_NAME["plaid"]


@pytest.fixture(autouse=True)
def _key_server_up() -> Iterator[None]:
    fake_keys.STATE.fail = False
    yield
    fake_keys.STATE.fail = False


def post(client: TestClient, provider: str, request: s.Request) -> Any:
    return client.post(f"/webhooks/{provider}", content=request.body, headers=request.headers)


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


def sns_client(make_client: ClientFactory, key: s.Key, **extra: Any) -> TestClient:
    return make_client(**SNS.config(key, **extra))


def test_aws_documents_the_string_sns_signs() -> None:
    # AWS docs, "Verifying the signatures of Amazon SNS messages", notification example.
    message = {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
        "Subject": "My First Message",
        "Message": "Hello world!",
        "Timestamp": "2012-05-02T00:54:06.655Z",
        "SignatureVersion": "1",
    }
    assert string_to_sign(message) == (
        b"Message\nHello world!\nMessageId\n22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324\n"
        b"Subject\nMy First Message\nTimestamp\n2012-05-02T00:54:06.655Z\n"
        b"TopicArn\narn:aws:sns:us-west-2:123456789012:MyTopic\nType\nNotification\n"
    )


def test_sns_signature_version_1_is_rsa_sha1(make_client: ClientFactory, redis: Redis) -> None:
    key = s.sns_key("k1")
    signed = s.sign_sns(key, "m-v1", int(time.time()), SignatureVersion="1")
    assert post(sns_client(make_client, key), "sns", signed).json()["status"] == "accepted"


def test_sns_certificates_are_fetched_once(make_client: ClientFactory, redis: Redis) -> None:
    key = s.sns_key("cached")
    client = sns_client(make_client, key)
    before = len(fake_keys.STATE.hits)
    for n in range(3):
        assert post(client, "sns", s.sign_sns(key, f"m-{n}", int(time.time()))).status_code == 200
    assert len(fake_keys.STATE.hits) - before == 1


def test_an_unsubscribe_confirmation_is_an_event(make_client: ClientFactory, redis: Redis) -> None:
    key = s.sns_key("k1")
    signed = s.sign_sns(key, "u-1", int(time.time()), Type="UnsubscribeConfirmation")
    assert post(sns_client(make_client, key), "sns", signed).status_code == 200
    [job] = jobs(redis)
    assert (job.meta["event_id"], job.meta["type"]) == ("u-1", "UnsubscribeConfirmation")


@pytest.mark.parametrize(
    "change",
    [
        {"SigningCertURL": "https://sns.us-east-1.amazonaws.com.evil.example/x.pem"},
        {"SigningCertURL": "http://127.0.0.1:1/SimpleNotificationService.txt"},
        {"SignatureVersion": "3"},
        {"TopicArn": "arn:aws:sns:us-east-1:999999999999:orders"},
        {"Type": "Surprise"},
    ],
)
def test_sns_messages_off_the_rules_are_401(
    change: dict[str, str], make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("k1")
    # Signed with the changed field, so only the rule stops it.
    fields = {k: v for k, v in change.items() if k != "Type"}
    signed = s.sign_sns(key, "m-1", int(time.time()), **fields)
    body = json.loads(signed.body)
    body.update(change)
    response = post(
        sns_client(make_client, key), "sns", replace(signed, body=json.dumps(body).encode())
    )
    assert response.status_code == 401, response.text
    assert jobs(redis) == []


def test_an_sns_message_signed_by_another_key_than_its_certificate_is_401(
    make_client: ClientFactory, redis: Redis
) -> None:
    key, impostor = s.sns_key("k1"), s.sns_key("impostor")
    message = fake_keys.sns_message(impostor.material, "m-1", int(time.time()))
    message["SigningCertURL"] = key.material.url
    forged = s.Request(json.dumps(message).encode(), {}, "m-1")
    assert post(sns_client(make_client, key), "sns", forged).status_code == 401


def test_the_default_allow_list_refuses_a_local_certificate(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("k1")
    config = SNS.config(key)
    del config["webhook_fetch_allow"]
    before = len(fake_keys.STATE.hits)
    response = post(make_client(**config), "sns", s.sign_sns(key, "m-1", int(time.time())))
    assert response.status_code == 401 and len(fake_keys.STATE.hits) == before


def test_a_key_server_failure_is_503_and_the_retry_is_accepted(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("down")  # never fetched before: no cached certificate
    client = sns_client(make_client, key)
    signed = s.sign_sns(key, "m-1", int(time.time()))
    fake_keys.STATE.fail = True
    assert post(client, "sns", signed).status_code == 503
    assert jobs(redis) == []
    fake_keys.STATE.fail = False
    assert post(client, "sns", signed).json() == {"status": "accepted", "id": "m-1"}


@pytest.fixture
def silent_certificate() -> Iterator[tuple[s.Key, bytes]]:
    """An SNS message whose certificate URL is a server that accepts and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        key = s.sns_key("silent")
        message = fake_keys.sns_message(key.material, "m-1", int(time.time()))
        message["SigningCertURL"] = (
            f"http://127.0.0.1:{silent.getsockname()[1]}/SimpleNotificationService-{'0' * 32}.pem"
        )
        # The URL is not signed data, so the changed one still reaches the fetch.
        yield key, json.dumps(message).encode()


def test_a_key_server_that_never_answers_is_503_at_the_fetch_timeout(
    make_client: ClientFactory, silent_certificate: tuple[s.Key, bytes]
) -> None:
    key, body = silent_certificate
    client = sns_client(make_client, key, webhook_fetch_timeout=0.5)
    response = client.post("/webhooks/sns", content=body)
    assert response.status_code == 503
    assert "key server did not answer in time" in response.json()["detail"]


def test_a_key_fetch_is_cut_at_the_acknowledgement_deadline_not_the_fetch_timeout(
    make_client: ClientFactory, silent_certificate: tuple[s.Key, bytes]
) -> None:
    key, body = silent_certificate
    client = sns_client(make_client, key, webhook_fetch_timeout=30, webhook_ack_timeout=0.6)
    response = client.post("/webhooks/sns", content=body)
    assert response.status_code == 503
    assert "within WEBHOOK_ACK_TIMEOUT" in response.json()["detail"]


def certificate_url_variants(good: str) -> dict[str, str]:
    """The URL of a real certificate, changed in ways that name it (or nothing) anew."""
    origin, path = good[: good.index("/", 8)], good[good.index("/", 8) :]
    port = origin.rsplit(":", 1)[1]
    name = path.removeprefix("/SimpleNotificationService-").removesuffix(".pem")
    return {
        "query": good + "?n=1",
        "empty query": good + "?",
        "fragment": good + "#x",
        "empty fragment": good + "#",
        "user info": good.replace("http://", "http://user@"),
        "port with a leading zero": good.replace(f":{port}", f":0{port}"),
        "upper-case scheme": good.replace("http://", "HTTP://"),
        "another directory": f"{origin}/sns{path}",
        "double slash": f"{origin}/{path}",
        "upper-case hex": f"{origin}/SimpleNotificationService-{name.upper()}.pem",
        "31 hex digits": f"{origin}/SimpleNotificationService-{name[:31]}.pem",
        "percent-encoded": f"{origin}/SimpleNotificationService-%{ord(name[0]):02x}{name[1:]}.pem",
        "trailing slash": good + "/",
        "parameters": good + ";x",
        "not a .pem": good.removesuffix(".pem") + ".txt",
    }


def test_an_sns_certificate_url_off_awss_one_form_is_401_and_fetches_nothing(
    make_client: ClientFactory, redis: Redis
) -> None:
    # SigningCertURL is not signed: anyone can send any URL, and each new spelling was a new
    # cache key, so a new fetch (`?n=<i>`).
    key = s.sns_key("url-forms")
    client = sns_client(make_client, key)
    message = fake_keys.sns_message(key.material, "m-url", int(time.time()))
    before = len(fake_keys.STATE.hits)
    for name, variant in certificate_url_variants(key.material.url).items():
        body = json.dumps({**message, "SigningCertURL": variant}).encode()
        response = client.post("/webhooks/sns", content=body)
        assert response.status_code == 401, (name, response.text)
    assert fake_keys.STATE.hits[before:] == []
    assert post(client, "sns", s.Request(json.dumps(message).encode(), {}, "m-url")).json() == {
        "status": "accepted",
        "id": "m-url",
    }


AWS_CERTIFICATE = "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"


@pytest.mark.parametrize(
    ("url", "accepted"),
    [
        (AWS_CERTIFICATE, True),  # the URL in AWS's documented example messages
        (AWS_CERTIFICATE.replace(".com/", ".com.cn/"), True),
        (AWS_CERTIFICATE.replace("https://sns.", "https://SNS."), False),
        (AWS_CERTIFICATE.replace(".com/", ".com:443/"), True),  # a port; the allow-list refuses it
        (AWS_CERTIFICATE.replace(".com/", ".com./"), True),  # a trailing dot: so does it
        (AWS_CERTIFICATE + "?", False),
        (AWS_CERTIFICATE.replace("https://", "https://a:b@"), False),
        (AWS_CERTIFICATE.replace("https://", "https:///"), False),
        ("https://[::1/SimpleNotificationService-" + "0" * 32 + ".pem", False),
    ],
)
def test_the_shape_of_an_sns_certificate_url(url: str, accepted: bool) -> None:
    assert is_certificate_url(url) is accepted
    if accepted and (":443" in url or ".com./" in url):
        assert not KeyFetcher(DEFAULT_FETCH_ALLOW, 1.0).allowed(url)


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"TopicArn": "arn:aws:sns:us-east-1:999999999999:orders"}, 401),
        ({"Timestamp": "2020-01-01T00:00:00.000Z"}, 400),
        ({"Timestamp": "soon"}, 401),
        ({"Type": "Surprise"}, 401),
    ],
)
def test_sns_refuses_a_topic_a_timestamp_or_a_type_before_fetching_the_certificate(
    change: dict[str, str], status: int, make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("never-fetched-" + "-".join(change))  # not cached by any client
    fields = {k: v for k, v in change.items() if k != "Type"}
    message = fake_keys.sns_message(key.material, "m-pre", int(time.time()), **fields)
    before = len(fake_keys.STATE.hits)
    response = sns_client(make_client, key).post(
        "/webhooks/sns", content=json.dumps({**message, **change}).encode()
    )
    assert response.status_code == status, response.text
    assert fake_keys.STATE.hits[before:] == []


def test_sns_needs_its_topics(make_settings: Callable[..., Any]) -> None:
    with pytest.raises(ConfigError, match=r"^WEBHOOK_TOPICS_SNS is not set"):
        make_settings(webhook_sources="sns")


def plaid_token(signer: fake_keys.JwkSigner, body: bytes, **claims: Any) -> str:
    payload = {"iat": int(time.time()), "request_body_sha256": hashlib.sha256(body).hexdigest()}
    return jwt.encode(
        {**payload, **claims}, signer.private, algorithm="ES256", headers={"kid": signer.kid}
    )


def test_plaid_keys_are_fetched_once_per_key_id(make_client: ClientFactory, redis: Redis) -> None:
    key = s.plaid_key("cached")
    client = make_client(**PLAID.config(key))
    before = len(fake_keys.STATE.hits)
    for n in range(3):
        assert (
            post(client, "plaid", s.sign_plaid(key, f"item-{n}", int(time.time()))).status_code
            == 200
        )
    assert len(fake_keys.STATE.hits) - before == 1


def test_plaid_tokens_that_are_not_es256_or_name_another_key_are_401(
    make_client: ClientFactory, redis: Redis
) -> None:
    key, other = s.plaid_key("k1"), s.plaid_key("other-key")
    client = make_client(**PLAID.config(key))
    body = b'{"webhook_type": "ITEM", "webhook_code": "ERROR"}'
    forged = {
        "hs256": jwt.encode(
            {"iat": int(time.time())},
            "secret-key-of-32-bytes-or-more!!",
            algorithm="HS256",
            headers={"kid": key.material.kid},
        ),
        # Another key's signature under our key's id.
        "wrong key": plaid_token(replace(other.material, kid=key.material.kid), body),
        "unknown kid": jwt.encode(
            {"iat": int(time.time())},
            key.material.private,
            algorithm="ES256",
            headers={"kid": "kid-nobody"},
        ),
    }
    for name, token in forged.items():
        response = client.post(
            "/webhooks/plaid", content=body, headers={"Plaid-Verification": token}
        )
        assert response.status_code == 401, name
    assert jobs(redis) == []


def test_an_unknown_plaid_key_id_is_remembered_briefly(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plaid_key("k1")
    client = make_client(**PLAID.config(key))
    token = plaid_token(replace(key.material, kid="kid-ghost"), b"{}")
    before = len(fake_keys.STATE.hits)
    for _ in range(3):
        client.post("/webhooks/plaid", content=b"{}", headers={"Plaid-Verification": token})
    assert len(fake_keys.STATE.hits) - before == 1


def forge(header: dict[str, Any], claims: dict[str, Any]) -> str:
    """A token with this header and these claims and a signature of the right length."""

    def part(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return ".".join(
        part(p) for p in (json.dumps(header).encode(), json.dumps(claims).encode(), b"\x01" * 64)
    )


def test_plaid_checks_the_token_before_fetching_its_key(
    make_client: ClientFactory, redis: Redis
) -> None:
    # The kid exists on the (fake) key server, so a fetch would succeed: only the checks
    # of the unverified header and claims stop it. Each fetch is a call to Plaid's API
    # with our credentials.
    key = s.plaid_key("pre-checked")
    client = make_client(**PLAID.config(key))
    body = b'{"webhook_type": "ITEM", "webhook_code": "ERROR"}'
    now = int(time.time())
    good_claims = {"iat": now, "request_body_sha256": hashlib.sha256(body).hexdigest()}
    good_header = {"alg": "ES256", "kid": key.material.kid, "typ": "JWT"}
    refused = {
        "another body's hash": (good_header, {**good_claims, "request_body_sha256": "0" * 64}),
        "no body hash": (good_header, {"iat": now}),
        "old iat": (good_header, {**good_claims, "iat": now - 3600}),
        "future iat": (good_header, {**good_claims, "iat": now + 3600}),
        "no iat": (good_header, {"request_body_sha256": good_claims["request_body_sha256"]}),
        "HS256": ({**good_header, "alg": "HS256"}, good_claims),
        "kid with a slash": ({**good_header, "kid": "kid/../x"}, good_claims),
        "kid too long": ({**good_header, "kid": "k" * 101}, good_claims),
        "kid not text": ({**good_header, "kid": ["kid"]}, good_claims),
    }
    before = len(fake_keys.STATE.hits)
    for name, (header, claims) in refused.items():
        response = client.post(
            "/webhooks/plaid", content=body, headers={"Plaid-Verification": forge(header, claims)}
        )
        assert response.status_code in (400, 401), (name, response.text)
    assert fake_keys.STATE.hits[before:] == []
    # The same checks pass a real token, which then fetches its key once.
    signed = {"Plaid-Verification": plaid_token(key.material, body)}
    assert client.post("/webhooks/plaid", content=body, headers=signed).status_code == 200
    assert len(fake_keys.STATE.hits) - before == 1


def test_an_expired_plaid_key_is_401(make_client: ClientFactory, redis: Redis) -> None:
    key = s.plaid_key("k1")
    expired = fake_keys.jwk_signer("k1", expired_at=int(time.time()) - 60)
    body = b'{"webhook_type": "ITEM", "webhook_code": "ERROR"}'
    response = make_client(**PLAID.config(key)).post(
        "/webhooks/plaid", content=body, headers={"Plaid-Verification": plaid_token(expired, body)}
    )
    assert response.status_code == 401


def test_a_plaid_key_fetch_failure_is_503(make_client: ClientFactory, redis: Redis) -> None:
    key = s.plaid_key("plaid-down")
    client = make_client(**PLAID.config(key))
    fake_keys.STATE.fail = True
    assert post(client, "plaid", s.sign_plaid(key, "item-1", int(time.time()))).status_code == 503
    assert jobs(redis) == []


def test_plaid_needs_its_client_id_and_an_allowed_api(make_settings: Callable[..., Any]) -> None:
    key = s.plaid_key("k1")
    config = PLAID.config(key)
    del config["per_source"]["WEBHOOK_CLIENT_ID_PLAID"]
    with pytest.raises(ConfigError, match=r"^WEBHOOK_CLIENT_ID_PLAID is not set"):
        make_settings(**config)
    with pytest.raises(
        ConfigError, match=r"^WEBHOOK_API_BASE_PLAID: origin not on WEBHOOK_FETCH_ALLOW"
    ):
        make_settings(**PLAID.config(key, webhook_fetch_allow="https://production.plaid.com"))


ACCEPTED = 200


def test_a_flood_of_unknown_sns_certificates_makes_at_most_ten_fetches(
    make_client: ClientFactory, redis: Redis
) -> None:
    # Well-formed messages on our topic, each naming a certificate of its own: the fetch
    # is the only thing that can refuse them, so it is what the budget bounds.
    key = s.sns_key("flood-known")
    client = sns_client(make_client, key)
    now = int(time.time())
    before = len(fake_keys.STATE.hits)
    # The first of the minute's ten fetches: this certificate, cached.
    assert post(client, "sns", s.sign_sns(key, "m-before", now)).status_code == ACCEPTED
    statuses = []
    for n in range(40):
        message = fake_keys.sns_message(key.material, f"m-flood-{n}", now)
        message["SigningCertURL"] = f"{fake_keys.url()}/SimpleNotificationService-{n:032x}.pem"
        statuses.append(client.post("/webhooks/sns", content=json.dumps(message)).status_code)
    assert len(fake_keys.STATE.hits) - before == 10
    assert statuses == [401] * 9 + [503] * 31
    # The certificate cached before the flood still verifies, without a fetch.
    response = post(client, "sns", s.sign_sns(key, "m-after", now))
    assert response.json() == {"status": "accepted", "id": "m-after"}
    # A certificate never seen waits for the minute to pass: a 503, which SNS retries.
    other = s.sns_key("flood-new")
    assert post(client, "sns", s.sign_sns(other, "m-new", now)).status_code == 503
    assert len(fake_keys.STATE.hits) - before == 10


def test_a_flood_of_unknown_plaid_key_ids_makes_at_most_ten_fetches(
    make_client: ClientFactory, redis: Redis
) -> None:
    key = s.plaid_key("flood-plaid")
    client = make_client(**PLAID.config(key))
    now = int(time.time())
    before = len(fake_keys.STATE.hits)
    # The first of the minute's ten fetches: this key, cached.
    assert post(client, "plaid", s.sign_plaid(key, "item-before", now)).status_code == ACCEPTED
    body = b'{"webhook_type": "ITEM", "webhook_code": "ERROR"}'
    statuses = []
    for n in range(40):
        # Well-formed, for this body, fresh: only Plaid can say the key does not exist.
        token = plaid_token(replace(key.material, kid=f"kid-flood-{n}"), body)
        headers = {"Plaid-Verification": token}
        statuses.append(client.post("/webhooks/plaid", content=body, headers=headers).status_code)
    assert len(fake_keys.STATE.hits) - before == 10
    assert statuses == [401] * 9 + [503] * 31
    # A key id Plaid refused stays refused (401) without a fetch, and the key cached
    # before the flood still verifies.
    token = plaid_token(replace(key.material, kid="kid-flood-0"), body)
    headers = {"Plaid-Verification": token}
    assert client.post("/webhooks/plaid", content=body, headers=headers).status_code == 401
    assert post(client, "plaid", s.sign_plaid(key, "item-after", now)).status_code == ACCEPTED
    assert len(fake_keys.STATE.hits) - before == 10


def local_fetcher(**options: Any) -> KeyFetcher:
    return KeyFetcher([FETCH_ALLOW_LOCAL], 2.0, **options)


def certificate_url(n: int) -> str:
    return f"{fake_keys.url()}/SimpleNotificationService-{n:032x}.pem"


async def load_certificate(fetcher: KeyFetcher, url: str, source: str = "sns") -> object:
    return await fetcher.load(url, Fetch(url), load_certificate_key, source=source)


def test_refused_keys_never_push_good_keys_out_of_the_cache() -> None:
    good = s.sns_key("good-stays").material.url
    fetcher = local_fetcher(capacity=2, refused_capacity=3, new_keys=1000)

    async def scenario() -> list[str]:
        await load_certificate(fetcher, good)
        for n in range(20):
            with pytest.raises(KeyRefused):
                await load_certificate(fetcher, certificate_url(n))
        before = len(fake_keys.STATE.hits)
        await load_certificate(fetcher, good)  # still cached
        with pytest.raises(KeyRefused):  # remembered: one of the last three refused
            await load_certificate(fetcher, certificate_url(19))
        with pytest.raises(KeyRefused):  # forgotten: the refusals' own cache is small
            await load_certificate(fetcher, certificate_url(0))
        return fake_keys.STATE.hits[before:]

    assert asyncio.run(scenario()) == [urlsplit(certificate_url(0)).path]


def test_the_least_recently_used_good_key_goes_first() -> None:
    a, b, c = (s.sns_key(f"lru-{n}").material.url for n in "abc")
    fetcher = local_fetcher(capacity=2)

    async def scenario() -> list[str]:
        for url in (a, b, a, c):  # a is used again, so b is the one to go
            await load_certificate(fetcher, url)
        before = len(fake_keys.STATE.hits)
        await load_certificate(fetcher, a)
        await load_certificate(fetcher, b)
        return fake_keys.STATE.hits[before:]

    assert asyncio.run(scenario()) == [urlsplit(b).path]


def test_the_budget_of_new_keys_is_per_source_and_comes_back_after_its_window() -> None:
    moment = [1000.0]
    fetcher = local_fetcher(new_keys=2, per=60.0, clock=lambda: moment[0])

    async def scenario() -> None:
        for n in range(2):
            with pytest.raises(KeyRefused):
                await load_certificate(fetcher, certificate_url(100 + n), "a")
        before = len(fake_keys.STATE.hits)
        with pytest.raises(KeyUnavailable):
            await load_certificate(fetcher, certificate_url(102), "a")
        assert fake_keys.STATE.hits[before:] == []
        with pytest.raises(KeyRefused):  # another source has its own budget
            await load_certificate(fetcher, certificate_url(103), "b")
        with pytest.raises(KeyRefused):  # a remembered refusal costs nothing
            await load_certificate(fetcher, certificate_url(100), "a")
        moment[0] += 61  # the window has passed
        with pytest.raises(KeyRefused):
            await load_certificate(fetcher, certificate_url(102), "a")
        assert len(fake_keys.STATE.hits) - before == 2

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", True),
        ("https://sns.us-gov-west-1.amazonaws.com/a.pem", True),
        ("https://sns.cn-north-1.amazonaws.com.cn/a.pem", True),
        ("https://sns.s3.amazonaws.com/a.pem", False),
        ("https://sns.s3-us-west-2.amazonaws.com/a.pem", False),
        ("https://sns.us-east-1.amazonaws.com.evil.example/a.pem", False),
        ("https://evil@sns.us-east-1.amazonaws.com/a.pem", False),
        ("http://sns.us-east-1.amazonaws.com/a.pem", False),
        ("https://sns.us-east-1.amazonaws.com:8443/a.pem", False),
        ("https://production.plaid.com/webhook_verification_key/get", True),
        ("https://production.plaid.com.evil.example/", False),
        ("not a url", False),
        ("https://[::1/", False),
    ],
)
def test_the_default_allow_list(url: str, allowed: bool) -> None:
    assert KeyFetcher(DEFAULT_FETCH_ALLOW, 1.0).allowed(url) is allowed


@pytest.mark.parametrize(
    "entry", ["ftp://x", "https://a/b", "sns.*.amazonaws.com", "https://x:port"]
)
def test_a_malformed_allow_list_entry_stops_startup(
    entry: str, make_settings: Callable[..., Any]
) -> None:
    with pytest.raises(ConfigError, match=r"^WEBHOOK_FETCH_ALLOW: "):
        make_settings(webhook_fetch_allow=entry)


def test_the_fake_key_server_stops_and_closes_its_socket() -> None:
    # What the session fixture does at the end (`conftest.py`); the next use starts anew.
    port = int(fake_keys.url().rsplit(":", 1)[1])
    fake_keys.stop()
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))
    fake_keys.stop()  # stopping a stopped server is nothing
    key = s.sns_key("after-restart")
    assert key.material.url.startswith(fake_keys.url())
