"""Does the signature cover the event id? Checked from the attacker's side, per provider.

A captured request (body and signature) is re-sent with whatever the attacker can change
without breaking the signature: each header changed or dropped, each value of a JSON body
changed, the body re-spaced, a form's fields reordered, re-encoded or their trailing
newline moved. If any such request is accepted under another event id, the id comes from
something unsigned and the verifier must say so (`id_signed = False`): the receiver then
also dedupes by what is signed. A new provider that forgets the attribute fails here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.keyfetch import KeyFetcher
from app.providers import verifier_for
from app.settings import Settings
from tests.providers import cases
from tests.providers import signing as s
from tests.providers.json_types import json_at, json_paths, replaced

ClientFactory = Callable[..., TestClient]
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Sample:
    """A source, configured, and one request it accepts."""

    name: str
    config: dict[str, Any]
    request: s.Request


def provider_samples() -> Iterator[Sample]:
    for case in cases.CASES:
        key = case.make_key("k1")
        yield Sample(case.name, case.config(key), case.signed(key, "evt-cov"))


def recipe_sample(label: str, recipe: dict[str, Any], body: bytes, signed: bytes) -> Sample:
    secret = "acme-secret-0123456789"
    config = {
        "webhook_sources": "acme:recipe",
        "per_source": {"WEBHOOK_SECRET_ACME": secret, "WEBHOOK_RECIPE_ACME": json.dumps(recipe)},
    }
    headers = {"X-Acme-Signature": s.hex_hmac(secret, signed), "X-Acme-Delivery": "dlv-1"}
    return Sample(f"recipe ({label})", config, s.Request(body, headers, ""))


BODY = b'{"kind": "invoice.paid"}'
RECIPES = [
    recipe_sample(
        "header id",
        {"signature_header": "X-Acme-Signature", "id": "header:X-Acme-Delivery"},
        BODY,
        BODY,
    ),
    recipe_sample(
        "header id signed",
        {
            "signature_header": "X-Acme-Signature",
            "signed": "{id}.{body}",
            "id": "header:X-Acme-Delivery",
        },
        BODY,
        b"dlv-1." + BODY,
    ),
    recipe_sample(
        "body id, else a header",
        {"signature_header": "X-Acme-Signature", "id": ["json:id", "header:X-Acme-Delivery"]},
        BODY,
        BODY,
    ),
]


def zendesk_without_a_body_id() -> Sample:
    """Zendesk's id falls back to an unsigned header when the body has none."""
    key = s.plain_key("k1")
    body, stamp = b'{"type": "zen:event-type:ticket.created"}', s.iso(int(time.time()))
    headers = {
        "X-Zendesk-Webhook-Signature": s.b64_hmac(key.secret, stamp.encode() + body),
        "X-Zendesk-Webhook-Signature-Timestamp": stamp,
        "X-Zendesk-Webhook-Invocation-Id": "inv-1",
    }
    return Sample(
        "zendesk (no body id)", cases.BY_NAME["zendesk"].config(key), s.Request(body, headers, "")
    )


def signed_now() -> list[Sample]:
    """Every sample, signed now: a timestamped scheme's goes stale after the tolerance, and
    in a long suite a test runs well after its collection."""
    return [*provider_samples(), *RECIPES, zendesk_without_a_body_id()]


NAMES = [sample.name for sample in signed_now()]


def changed(value: object) -> object:
    if isinstance(value, str):
        return value + "2"
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 1
    return value


def header_changes(request: s.Request) -> Iterator[tuple[str, s.Request]]:
    for name, value in request.headers.items():
        yield f"{name} changed", replace(request, headers={**request.headers, name: value + "2"})
        dropped = {k: v for k, v in request.headers.items() if k != name}
        yield f"{name} dropped", replace(request, headers=dropped)


def json_changes(request: s.Request) -> Iterator[tuple[str, s.Request]]:
    try:
        payload = json.loads(request.body)
    except ValueError:
        return
    yield "re-spaced", replace(request, body=json.dumps(payload, indent=1).encode())
    for path in json_paths(payload):
        value = json_at(payload, path)
        if path and changed(value) != value:
            body = json.dumps(replaced(payload, path, changed(value))).encode()
            yield f"body {'.'.join(map(str, path))} changed", replace(request, body=body)


def form_changes(request: s.Request) -> Iterator[tuple[str, s.Request]]:
    if not request.headers.get("Content-Type", "").startswith(FORM):
        return
    fields = parse_qsl(request.body.decode(), keep_blank_values=True)
    variants = {
        "reordered": list(reversed(fields)),
        "re-encoded": fields,
    }
    for i, (name, value) in enumerate(fields):
        variants[f"{name} changed"] = [*fields[:i], (name, value + "2"), *fields[i + 1 :]]
        variants[f"{name} without its trailing newline"] = [
            *fields[:i],
            (name, value.removesuffix("\n")),
            *fields[i + 1 :],
        ]
    for label, pairs in variants.items():
        via = quote if label == "re-encoded" else None
        body = urlencode(pairs, quote_via=via) if via else urlencode(pairs)
        yield label, replace(request, body=body.encode())


def changes(request: s.Request) -> Iterator[tuple[str, s.Request]]:
    yield from header_changes(request)
    yield from json_changes(request)
    yield from form_changes(request)


def job_ids(redis: Redis) -> dict[str, str]:
    return {job.id: job.meta["event_id"] for job in Queue("webhooks", connection=redis).get_jobs()}


def new_event_id(
    client: TestClient, redis: Redis, sample: Sample, request: s.Request
) -> str | None:
    """The event id a new job was queued under for this request, or None (refused, a
    duplicate, or a handshake's answer)."""
    before = job_ids(redis)
    path = "/webhooks/" + source_name(sample)
    query = f"?{request.query}" if request.query else ""
    response = client.post(path + query, content=request.body, headers=request.headers)
    added = [event_id for job, event_id in job_ids(redis).items() if job not in before]
    return added[0] if response.status_code == 200 and added else None


def source_name(sample: Sample) -> str:
    return str(sample.config["webhook_sources"]).split(":")[0]


def moved_ids(
    sample: Sample, make_settings: Callable[..., Settings], make_client: ClientFactory, redis: Redis
) -> list[str]:
    """The changes under which the verifier accepts the captured request with another id.
    Read in log-only mode, which queues what would be a duplicate: so the receiver's own
    dedupe by the signed bytes cannot hide what the verifier would accept."""
    client = make_client(make_settings(**sample.config, webhook_dedupe_mode="log-only"))
    original = new_event_id(client, redis, sample, sample.request)
    assert original is not None, "the sample itself must be accepted"
    moved = []
    for label, request in changes(sample.request):
        event_id = new_event_id(client, redis, sample, request)
        if event_id is not None and event_id != original:
            moved.append(label)
    redis.flushdb()
    return moved


def declares_its_id_signed(sample: Sample) -> bool:
    settings = Settings.load(_env_file=None, **sample.config)
    source = settings.sources[source_name(sample)]
    return verifier_for(source, KeyFetcher.from_settings(settings)).id_signed


# Zendesk's id comes from its body unless the body has none: "zendesk (no body id)" is the
# sample whose id moves, so the body-id one would prove nothing here.
UNSIGNED = [
    sample.name
    for sample in signed_now()
    if not declares_its_id_signed(sample) and sample.name != "zendesk"
]


@pytest.fixture
def sample(request: pytest.FixtureRequest) -> Sample:
    return next(found for found in signed_now() if found.name == request.param)


@pytest.mark.parametrize("sample", NAMES, indirect=True)
def test_a_verifier_that_accepts_a_captured_request_under_another_id_says_its_id_is_unsigned(
    sample: Sample,
    make_settings: Callable[..., Settings],
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    moved = moved_ids(sample, make_settings, make_client, redis)
    assert not moved or not declares_its_id_signed(sample), (
        f"{sample.name}: accepted under a new event id when {moved}, but id_signed is True"
    )


@pytest.mark.parametrize("sample", UNSIGNED, indirect=True)
def test_a_captured_request_resent_under_another_unsigned_id_queues_nothing(
    sample: Sample,
    make_settings: Callable[..., Settings],
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    # The attacker's side: every change the verifier lets through under a new id is a
    # replay of the captured event, and the receiver's dedupe by what is signed stops it.
    moved = set(moved_ids(sample, make_settings, make_client, redis))
    assert moved, f"{sample.name}: no change moves its id, so this proves nothing"
    client = make_client(make_settings(**sample.config))
    assert new_event_id(client, redis, sample, sample.request) is not None
    replayed = [
        label
        for label, request in changes(sample.request)
        if label in moved and new_event_id(client, redis, sample, request) is not None
    ]
    assert not replayed, f"{sample.name}: queued again when {replayed}"


def test_a_braintree_notification_without_its_trailing_newline_is_a_duplicate(
    make_client: ClientFactory, redis: Redis
) -> None:
    # Braintree's SDK accepts the signed payload with or without one trailing newline; both
    # spellings must be one event, not two.
    key = s.braintree_key("k1")
    client = make_client(**cases.BY_NAME["braintree"].config(key))
    signed = s.sign_braintree(key, "sub_1", int(time.time()))
    fields = dict(parse_qsl(signed.body.decode()))
    assert fields["bt_payload"].endswith("\n")
    stripped = urlencode({**fields, "bt_payload": fields["bt_payload"].rstrip("\n")}).encode()
    first = client.post("/webhooks/braintree", content=signed.body, headers=signed.headers)
    again = client.post("/webhooks/braintree", content=stripped, headers=signed.headers)
    assert first.json() == {"status": "accepted", "id": signed.event_id}
    assert again.json() == {"status": "duplicate", "id": signed.event_id}
    assert len(Queue("webhooks", connection=redis).get_jobs()) == 1


def test_a_twilio_form_reordered_under_a_fresh_idempotency_token_is_a_duplicate(
    make_client: ClientFactory, redis: Redis
) -> None:
    # Two changes at once: Twilio signs its fields sorted, so their order in the body is
    # the attacker's, and so is the token header that gives the id.
    key = s.plain_key("k1")
    client = make_client(**cases.BY_NAME["twilio"].config(key))
    signed = s.sign_twilio(key, "tok-1", int(time.time()))
    fields = parse_qsl(signed.body.decode())
    reordered = urlencode(list(reversed(fields))).encode()
    headers = {**signed.headers, "I-Twilio-Idempotency-Token": "tok-forged"}
    url = f"/webhooks/twilio?{signed.query}"
    assert client.post(url, content=signed.body, headers=signed.headers).status_code == 200
    # Twilio is answered TwiML either way: the queue tells accepted from duplicate.
    assert client.post(url, content=reordered, headers=headers).status_code == 200
    assert list(job_ids(redis).values()) == ["tok-1"]
