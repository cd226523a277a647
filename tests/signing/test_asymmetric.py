"""The asymmetric signers against the real app, with the dev stack's keys: a development
key pair per source (`workers/dev/devkeys.py`), the key server (`keyserver.py`) the SNS and
Plaid verifiers fetch from, and the settings `dev_key_env` gives the stack's processes.
Where the test extras hold the provider's SDK (or an independent implementation), it is the
oracle the signed request must pass too."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from discord_interactions import verify_key
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from sendgrid.helpers.eventwebhook import EventWebhook

from app.settings import DEFAULT_FETCH_ALLOW, Settings, SourceConfig
from app.sources import PER_SOURCE_PREFIXES
from tests.providers.fake_keys import sns_string_to_sign
from workers.dev.devkeys import (
    DEV_KEYS,
    KEY_SERVER_FILE,
    dev_key_env,
    dev_keys,
    key_path,
    needs_key_server,
    private_key_for,
)
from workers.dev.keypair import DevKey
from workers.dev.keyserver import PLAID_KEY_PATH, start_key_server
from workers.signing import SIGNERS, EventToSign, Keys, SignedRequest, SigningError

SOURCES = "interactions:discord,mail:sendgrid,topics:sns,bank:plaid"
SOURCE_OF = {"discord": "interactions", "sendgrid": "mail", "sns": "topics", "plaid": "bank"}
PROVIDERS = list(SOURCE_OF)
TYPE_OF = {
    "discord": "application_command",
    "sendgrid": "delivered",
    "sns": "Notification",
    "plaid": "TRANSACTIONS.SYNC_UPDATES_AVAILABLE",
}
DISCORD_ACK = {"application_command": 5, "message_component": 6, "modal_submit": 5}
ClientFactory = Callable[..., TestClient]


@dataclass
class DevStack:
    root: Path
    keys: list[DevKey]
    url: str
    env: dict[str, str]

    def overrides(self) -> dict[str, Any]:
        """`dev_key_env` as settings: per-source variables, and the fetch allow-list."""
        per_source = {k: v for k, v in self.env.items() if k.startswith(PER_SOURCE_PREFIXES)}
        return {
            "webhook_sources": SOURCES,
            "per_source": per_source,
            "webhook_fetch_allow": self.env["WEBHOOK_FETCH_ALLOW"],
        }

    def settings(self, make_settings: Callable[..., Settings]) -> Settings:
        return make_settings(**self.overrides())

    def source(self, provider: str) -> SourceConfig:
        return Settings.load(_env_file=None, **self.overrides()).sources[SOURCE_OF[provider]]

    def private_key(self, provider: str) -> bytes:
        pem = private_key_for(SOURCE_OF[provider], self.root)
        assert pem is not None
        return pem

    def sign(self, provider: str, event_id: str = "evt-1", **fields: Any) -> SignedRequest:
        source = SOURCE_OF[provider]
        event = EventToSign(
            event_id=event_id,
            event_type=fields.pop("event_type", TYPE_OF[provider]),
            url=f"http://testserver/webhooks/{source}",
            **fields,
        )
        keys = Keys(private_key=self.private_key(provider))
        return SIGNERS[provider](self.source(provider), event, keys)


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DevStack]:
    """What `make run` does for these sources, in a checkout of its own (tmp_path)."""
    monkeypatch.setenv("WEBHOOK_SOURCES", SOURCES)
    keys = dev_keys(tmp_path)
    url, stop = start_key_server(keys, tmp_path)
    yield DevStack(tmp_path, keys, url, dev_key_env(keys, url, tmp_path))
    stop()


def post(client: TestClient, signed: SignedRequest) -> Any:
    parts = urlsplit(signed.url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return client.post(path, content=signed.body, headers=signed.headers)


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


def answered(provider: str, response: Any, signed: SignedRequest, status: str) -> None:
    assert response.status_code == 200, response.text
    if provider == "discord":  # Discord's deferral, not our JSON
        assert response.json() == {"type": 5}
    else:
        assert response.json() == {"status": status, "id": signed.event_id}


def flip_id(signed: SignedRequest) -> SignedRequest:
    """One signed byte changed: the last character of the id's first occurrence (Discord's
    `id`, SendGrid's `sg_event_id`, SNS's `MessageId`, Plaid's `item_id`)."""
    assert b"evt-1" in signed.body
    return replace(signed, body=signed.body.replace(b"evt-1", b"evt-2", 1))


# --- through the real app ----------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_signed_request_is_accepted_with_its_id_and_type(
    provider: str, stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    signed = stack.sign(provider)
    response = post(make_client(**stack.overrides()), signed)
    answered(provider, response, signed, "accepted")
    [job] = jobs(redis)
    assert (job.meta["source"], job.meta["event_id"], job.meta["type"]) == (
        SOURCE_OF[provider],
        signed.event_id,
        TYPE_OF[provider],
    )
    expected_id = "evt-1" if provider in ("discord", "sns") else None
    if expected_id is None:  # the body's digest
        assert signed.event_id == "sha256:" + hashlib.sha256(signed.body).hexdigest()
    else:
        assert signed.event_id == expected_id


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_same_id_again_is_a_duplicate_even_signed_later(
    provider: str, stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    client = make_client(**stack.overrides())
    first = stack.sign(provider)
    answered(provider, post(client, first), first, "accepted")
    answered(provider, post(client, first), first, "duplicate")
    later = stack.sign(provider, timestamp=first_timestamp(first) + 1)
    assert later.event_id == first.event_id
    answered(provider, post(client, later), first, "duplicate")
    assert len(jobs(redis)) == 1


def first_timestamp(signed: SignedRequest) -> int:
    for name in ("X-Signature-Timestamp", "X-Twilio-Email-Event-Webhook-Timestamp"):
        if name in signed.headers:
            return int(signed.headers[name])
    if "Plaid-Verification" in signed.headers:
        claims = signed.headers["Plaid-Verification"].split(".")[1]
        return int(json.loads(base64.urlsafe_b64decode(claims + "==="))["iat"])
    stamp = json.loads(signed.body)["Timestamp"]
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_changed_signed_byte_is_refused_and_nothing_is_queued(
    provider: str, stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    client = make_client(**stack.overrides())
    response = post(client, flip_id(stack.sign(provider)))
    assert response.status_code in (400, 401), response.text
    assert jobs(redis) == []


@pytest.mark.parametrize("kind", ["message_component", "modal_submit"])
def test_discord_interaction_types_map_to_the_numbers_the_verifier_dispatches(
    kind: str, stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    signed = stack.sign("discord", event_type=kind)
    assert json.loads(signed.body)["type"] == {"message_component": 3, "modal_submit": 5}[kind]
    response = post(make_client(**stack.overrides()), signed)
    assert response.json() == {"type": DISCORD_ACK[kind]}
    [job] = jobs(redis)
    assert (job.meta["event_id"], job.meta["type"]) == ("evt-1", kind)


def test_a_discord_autocomplete_is_answered_with_no_choices(
    stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    signed = stack.sign("discord", event_type="autocomplete")
    response = post(make_client(**stack.overrides()), signed)
    assert response.json() == {"type": 8, "data": {"choices": []}}
    assert [j.meta["type"] for j in jobs(redis)] == ["autocomplete"]


def test_a_discord_ping_is_answered_pong_and_queues_nothing(
    stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    signed = stack.sign("discord", event_type="ping")
    assert json.loads(signed.body)["type"] == 1
    assert signed.event_id == ""
    response = post(make_client(**stack.overrides()), signed)
    assert (response.status_code, response.json()) == (200, {"type": 1})
    assert jobs(redis) == []


@pytest.mark.parametrize(
    ("provider", "data"),
    [
        ("discord", {"name": "deploy", "type": 1, "id": "42"}),
        ("sendgrid", {"email": "b@example.com", "event": "bounce", "reason": "full"}),
        ("sns", {"order": 7}),
        ("plaid", {"webhook_type": "ITEM", "webhook_code": "ERROR", "error": None}),
    ],
)
def test_data_replaces_the_event_object(
    provider: str,
    data: dict[str, Any],
    stack: DevStack,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    signed = stack.sign(provider, data=data)
    body = json.loads(signed.body)
    if provider == "discord":
        assert body["data"] == data
    elif provider == "sendgrid":  # its id defaults to the event id; its own type kept
        assert body == [{"sg_event_id": "evt-1", **data}]
    elif provider == "sns":
        assert json.loads(body["Message"]) == data
    else:
        assert body == {"item_id": "evt-1", **data}
    post(make_client(**stack.overrides()), signed)
    [job] = jobs(redis)
    expected = {"sendgrid": "bounce", "plaid": "ITEM.ERROR"}.get(provider, TYPE_OF[provider])
    assert (job.meta["event_id"], job.meta["type"]) == (signed.event_id, expected)


def test_an_sns_type_other_than_snss_own_is_the_notifications_subject(
    stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    signed = stack.sign("sns", event_type="order.created")
    assert json.loads(signed.body)["Subject"] == "order.created"
    response = post(make_client(**stack.overrides()), signed)
    assert response.json() == {"status": "accepted", "id": "evt-1"}
    assert [j.meta["type"] for j in jobs(redis)] == ["Notification"]


def test_an_sns_unsubscribe_confirmation_is_signed_and_queued(
    stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    signed = stack.sign("sns", event_type="UnsubscribeConfirmation")
    response = post(make_client(**stack.overrides()), signed)
    assert response.json() == {"status": "accepted", "id": "evt-1"}
    assert [j.meta["type"] for j in jobs(redis)] == ["UnsubscribeConfirmation"]


# --- the oracles -------------------------------------------------------------------------


def test_discord_interactions_verify_key_agrees(stack: DevStack) -> None:
    signed = stack.sign("discord")
    public_key = stack.env["WEBHOOK_SECRET_INTERACTIONS"]
    h = signed.headers
    assert verify_key(signed.body, h["X-Signature-Ed25519"], h["X-Signature-Timestamp"], public_key)
    assert not verify_key(
        flip_id(signed).body, h["X-Signature-Ed25519"], h["X-Signature-Timestamp"], public_key
    )


def test_sendgrids_event_webhook_agrees(stack: DevStack) -> None:
    signed = stack.sign("sendgrid")
    webhook = EventWebhook(stack.env["WEBHOOK_SECRET_MAIL"])
    h = signed.headers
    signature = h["X-Twilio-Email-Event-Webhook-Signature"]
    stamp = h["X-Twilio-Email-Event-Webhook-Timestamp"]
    assert webhook.verify_signature(signed.body.decode(), signature, stamp)
    assert not webhook.verify_signature(flip_id(signed).body.decode(), signature, stamp)
    [event] = json.loads(signed.body)
    assert {"sg_event_id", "event", "email", "timestamp"} <= set(event)


def test_pyjwt_decodes_plaids_token_with_the_key_servers_jwk(stack: DevStack) -> None:
    signed = stack.sign("plaid")
    token = signed.headers["Plaid-Verification"]
    header = jwt.get_unverified_header(token)
    answer = httpx.post(
        stack.url + PLAID_KEY_PATH,
        json={
            "client_id": stack.env["WEBHOOK_CLIENT_ID_BANK"],
            "secret": stack.env["WEBHOOK_SECRET_BANK"],
            "key_id": header["kid"],
        },
    )
    assert answer.status_code == 200
    key = jwt.PyJWK(answer.json()["key"])
    claims = jwt.decode(token, key=key.key, algorithms=["ES256"])
    assert header["alg"] == "ES256"
    assert claims["request_body_sha256"] == hashlib.sha256(signed.body).hexdigest()
    assert isinstance(claims["iat"], int)


def test_snss_signature_checks_with_awss_canonical_string_and_the_served_certificate(
    stack: DevStack,
) -> None:
    signed = stack.sign("sns")
    message = json.loads(signed.body)
    assert message["SigningCertURL"].startswith(stack.url + "/SimpleNotificationService-")
    assert message["TopicArn"] == stack.env["WEBHOOK_TOPICS_TOPICS"]
    assert signed.headers["x-amz-sns-message-type"] == "Notification"
    assert signed.headers["x-amz-sns-topic-arn"] == message["TopicArn"]
    certificate = x509.load_pem_x509_certificate(httpx.get(message["SigningCertURL"]).content)
    certificate.public_key().verify(  # type: ignore[call-arg]
        base64.b64decode(message["Signature"]),
        sns_string_to_sign(message),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )


# --- without a key -------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_a_private_key_the_signer_says_why_and_how_in_one_line(
    provider: str, stack: DevStack
) -> None:
    event = EventToSign("evt-1", TYPE_OF[provider], "http://testserver/webhooks/x")
    with pytest.raises(SigningError) as raised:
        SIGNERS[provider](stack.source(provider), event, Keys(secret="a-secret-of-some-length"))
    message = str(raised.value)
    assert "\n" not in message
    assert "private key" in message and "public key" in message
    assert "make run" in message and "development key pair" in message
    assert repr(SOURCE_OF[provider]) in message


def test_a_key_of_another_algorithm_is_refused(stack: DevStack) -> None:
    event = EventToSign("evt-1", "application_command", "http://testserver/webhooks/x")
    with pytest.raises(SigningError, match="Ed25519"):
        keys = Keys(private_key=stack.private_key("plaid"))
        SIGNERS["discord"](stack.source("discord"), event, keys)


def test_sns_without_the_key_servers_url_says_it_is_not_running(stack: DevStack) -> None:
    pem = key_path("topics", stack.root).read_bytes()  # the key, with no SigningCertURL line
    event = EventToSign("evt-1", "Notification", "http://testserver/webhooks/topics")
    with pytest.raises(SigningError, match=r"key server .* not running"):
        SIGNERS["sns"](stack.source("sns"), event, Keys(private_key=pem))


# --- devkeys --------------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_are_kept_private_and_reused(tmp_path: Path) -> None:
    first = dev_keys(tmp_path, SOURCES)
    assert [k.source for k in first] == ["interactions", "mail", "topics", "bank"]
    assert mode(tmp_path / DEV_KEYS) == 0o700
    for key in first:
        assert mode(key_path(key.source, tmp_path)) == 0o600
    assert sorted(p.name for p in (tmp_path / DEV_KEYS).iterdir()) == [
        "bank.pem",
        "interactions.pem",
        "mail.pem",
        "topics.pem",
    ]
    again = dev_keys(tmp_path, SOURCES)
    assert [k.pem for k in again] == [k.pem for k in first]
    assert b"BEGIN CERTIFICATE" in key_path("topics", tmp_path).read_bytes()


def test_a_kept_key_of_another_kind_is_made_anew(tmp_path: Path) -> None:
    [discord] = dev_keys(tmp_path, "hooks:discord")
    [sendgrid] = dev_keys(tmp_path, "hooks:sendgrid")
    assert sendgrid.pem != discord.pem
    assert base64.b64decode(sendgrid.public_value)  # a P-256 key SendGrid's form reads
    assert mode(key_path("hooks", tmp_path)) == 0o600


def test_no_key_is_ever_printed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", SOURCES)
    keys = dev_keys(tmp_path)
    url, stop = start_key_server(keys, tmp_path)
    env = dev_key_env(keys, url, tmp_path)
    for key in keys:
        private_key_for(key.source, tmp_path)
        assert "BEGIN" not in repr(key)
    httpx.get(url + "/nothing")
    bank = next(k for k in keys if k.provider == "plaid")
    httpx.post(
        url + PLAID_KEY_PATH,
        json={"client_id": bank.plaid_client_id, "secret": "wrong", "key_id": bank.plaid_key_id},
    )
    stop()
    out, err = capfd.readouterr()
    for key in keys:
        for line in key.pem.decode().splitlines():
            if "-----" not in line:
                assert line not in out + err
    for secret in (v for k, v in env.items() if k.startswith("WEBHOOK_SECRET_")):
        assert secret not in out + err


def test_only_sources_without_a_key_of_their_own_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET_INTERACTIONS", "a" * 64)
    (tmp_path / ".env").write_text("WEBHOOK_API_BASE_BANK=https://sandbox.plaid.com\n")
    keys = dev_keys(tmp_path, SOURCES + ",inbound,github")
    assert [k.source for k in keys] == ["mail", "topics"]  # SNS's own are AWS's: always one
    assert not key_path("interactions", tmp_path).exists()


def test_a_stack_without_such_sources_makes_no_key_and_no_key_server(tmp_path: Path) -> None:
    keys = dev_keys(tmp_path, "inbound,github,billing:stripe")
    assert keys == [] and not needs_key_server(keys)
    assert not (tmp_path / "var").exists()
    assert not needs_key_server(dev_keys(tmp_path, "interactions:discord,mail:sendgrid"))


def test_the_env_keeps_what_the_user_set_and_extends_the_fetch_allow_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = dev_keys(tmp_path, SOURCES)
    url = "http://127.0.0.1:5999"
    env = dev_key_env(keys, url, tmp_path)
    assert env["WEBHOOK_FETCH_ALLOW"].split(",") == [*DEFAULT_FETCH_ALLOW, url]
    assert env["WEBHOOK_TOPICS_TOPICS"] == "arn:aws:sns:us-east-1:000000000000:topics"
    assert env["WEBHOOK_API_BASE_BANK"] == url
    assert len(env["WEBHOOK_SECRET_BANK"]) == 30
    assert len(env["WEBHOOK_SECRET_INTERACTIONS"]) == 64
    monkeypatch.setenv("WEBHOOK_FETCH_ALLOW", "https://keys.example.com")
    monkeypatch.setenv("WEBHOOK_TOPICS_TOPICS", "arn:aws:sns:*:123456789012:orders")
    monkeypatch.setenv("WEBHOOK_CLIENT_ID_BANK", "my-client-id")
    keys = dev_keys(tmp_path, SOURCES)
    env = dev_key_env(keys, url, tmp_path)
    assert env["WEBHOOK_FETCH_ALLOW"] == f"https://keys.example.com,{url}"
    assert "WEBHOOK_TOPICS_TOPICS" not in env and "WEBHOOK_CLIENT_ID_BANK" not in env
    assert next(k for k in keys if k.provider == "plaid").plaid_client_id == "my-client-id"


def test_a_users_topics_and_client_id_are_used_by_the_signer_and_the_key_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", SOURCES)
    topics = "arn:aws:sns:*:123456789012:orders"
    keys = dev_keys(tmp_path)
    url, stop = start_key_server(keys, tmp_path)
    try:
        env = dev_key_env(keys, url, tmp_path)
        env["WEBHOOK_TOPICS_TOPICS"] = topics  # as if the user had set it
        stack = DevStack(tmp_path, keys, url, env)
        signed = stack.sign("sns")
        assert json.loads(signed.body)["TopicArn"] == "arn:aws:sns:dev:123456789012:orders"
        response = post(make_client(**stack.overrides()), signed)
        assert response.json() == {"status": "accepted", "id": "evt-1"}
    finally:
        stop()


def test_private_key_for_names_only_the_stacks_own_keys(
    stack: DevStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        private_key_for("interactions", stack.root)
        == key_path("interactions", stack.root).read_bytes()
    )
    for other in ("inbound", "nope", "../interactions", "Interactions"):
        assert private_key_for(other, stack.root) is None
    sns = private_key_for("topics", stack.root)
    assert sns is not None and sns.startswith(f"SigningCertURL: {stack.url}/".encode())
    # The user set the source's key: the dev key no longer signs for it.
    monkeypatch.setenv("WEBHOOK_SECRET_INTERACTIONS", "b" * 64)
    assert private_key_for("interactions", stack.root) is None


def test_private_key_for_sns_names_no_certificate_once_the_key_server_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", "topics:sns")
    keys = dev_keys(tmp_path)
    _, stop = start_key_server(keys, tmp_path)
    assert (tmp_path / KEY_SERVER_FILE).is_file()
    stop()
    stop()  # again: nothing left to stop
    assert not (tmp_path / KEY_SERVER_FILE).exists()
    assert private_key_for("topics", tmp_path) == keys[0].pem


def test_without_a_key_server_url_sns_and_plaid_cannot_be_configured(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="key server"):
        dev_key_env(dev_keys(tmp_path, "topics:sns"), None, tmp_path)
    env = dev_key_env(dev_keys(tmp_path, "interactions:discord"), None, tmp_path)
    assert list(env) == ["WEBHOOK_SECRET_INTERACTIONS"]


# --- the key server -------------------------------------------------------------------------


def test_the_key_server_serves_only_its_paths(stack: DevStack) -> None:
    sns = next(k for k in stack.keys if k.provider == "sns")
    certificate = httpx.get(stack.url + sns.certificate_path)
    assert certificate.status_code == 200
    assert certificate.content == sns.certificate
    assert b"PRIVATE" not in certificate.content
    for path in (
        "/",
        "/SimpleNotificationService-" + "0" * 32 + ".pem",
        sns.certificate_path + "?x=1",
        "/topics.pem",
        "/../var/dev-keys/topics.pem",
        PLAID_KEY_PATH,  # a GET
    ):
        assert httpx.get(stack.url + path).status_code == 404, path
    assert httpx.post(stack.url + "/other", json={}).status_code == 404
    assert httpx.put(stack.url + sns.certificate_path).status_code == 404


def test_the_key_server_gives_plaids_key_only_for_the_sources_credentials(
    stack: DevStack,
) -> None:
    bank = next(k for k in stack.keys if k.provider == "plaid")
    good = {
        "client_id": stack.env["WEBHOOK_CLIENT_ID_BANK"],
        "secret": stack.env["WEBHOOK_SECRET_BANK"],
        "key_id": bank.plaid_key_id,
    }
    answer = httpx.post(stack.url + PLAID_KEY_PATH, json=good)
    assert answer.status_code == 200
    assert answer.json()["key"] == bank.plaid_jwk()
    assert "d" not in answer.json()["key"]  # the public half only
    for wrong, code in (
        ({"secret": "0" * 30}, "INVALID_API_KEYS"),
        ({"client_id": "someone-else"}, "INVALID_API_KEYS"),
        ({"key_id": "another-key"}, "INVALID_WEBHOOK_VERIFICATION_KEY_ID"),
        ({"secret": None}, "INVALID_BODY"),
    ):
        refused = httpx.post(stack.url + PLAID_KEY_PATH, json={**good, **wrong})
        assert refused.status_code == 400, wrong
        assert refused.json()["error_code"] == code
    broken = httpx.post(stack.url + PLAID_KEY_PATH, content=b"{not json")
    assert broken.status_code == 400


def test_a_plaid_source_refuses_a_token_the_key_server_does_not_know(
    stack: DevStack, make_client: ClientFactory, redis: Redis
) -> None:
    # The receiver holds the wrong API secret: the key server refuses it, so the
    # verifier has no key for the token, and the request is a 401.
    overrides = stack.overrides()
    overrides["per_source"] = {**overrides["per_source"], "WEBHOOK_SECRET_BANK": "f" * 30}
    response = post(make_client(**overrides), stack.sign("plaid"))
    assert response.status_code == 401, response.text
    assert jobs(redis) == []


def test_every_asymmetric_provider_has_a_signer() -> None:
    assert {"discord", "sendgrid", "sns", "plaid"} <= set(SIGNERS)
