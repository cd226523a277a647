"""Property-based, for every added provider: whatever headers and body arrive, no 500 and
nothing accepted that the source's key did not sign.

Bodies are random bytes, or a real request of the provider signed with *another* key and
then mutated, so the parsers of schemes that sign inside the body (Mailgun, Adyen,
Braintree, SNS) meet realistic shapes. The SNS source accepts no topic the fake signs for,
so even a mutation that still verifies is refused.

Byte mutations almost never change a JSON value's type, so the tests at the end replace
the values of real bodies with values of other types (lists, objects, null, numbers,
booleans, huge strings): in what is read before the signature is checked (never a 500,
never accepted unless only what the provider leaves unsigned changed), and in bodies the
provider signs after the change (never a 500).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from unittest.mock import patch

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from tests.providers import signing
from tests.providers.cases import BY_NAME, CASES, Case
from tests.providers.json_types import (
    REPRESENTATIVES,
    JsonPath,
    apply,
    json_at,
    json_paths,
    replacements,
)
from tests.providers.signing import Key, Request

TOKENS = [
    "t=",
    "v1=",
    "v0=",
    "sha256=",
    "sha1=",
    "h1=",
    "ts=",
    "v1,",
    ",",
    ";",
    " ",
    "=",
    "|",
    "&",
    ".",
    "1700000000",
    "-1",
    "99999999999999999999",
    "a" * 64,
    "0" * 128,
    "YWJj",
    "=" * 4,
    "whsec_",
    "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ",
    "2019-11-16T10:11:12.634234626Z",
    "é",
    "\t",
    "%00",
]
# Bodies of the shapes the receivers parse first, or that fail to decode.
SAMPLE_BODIES = [
    b"{}",
    b'{"id": "e", "type": "x", "event_id": "e"}',
    b"[]",
    b"null",
    b'{"type": "url_verification", "challenge": "c"}',
    b"\xff\xfe{",
]
header_value = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=120),
    st.lists(st.sampled_from(TOKENS), max_size=8).map("".join),
)


FETCHERS = ("sns", "plaid")  # a key fetched from a closed port is a 503


def stored(redis: Redis) -> list[bytes]:
    """What the requests left in Redis, but the Events page's timeline samples, which the
    receiver writes every interval whatever the requests were."""
    return [key for key in redis.keys("*") if b":timeline" not in key]


@st.composite
def mutated(draw: st.DrawFn, body: bytes) -> bytes:
    """The body with up to 8 bytes somewhere replaced by up to 8 others."""
    start = draw(st.integers(0, len(body)))
    end = draw(st.integers(start, min(len(body), start + 8)))
    return body[:start] + draw(st.binary(max_size=8)) + body[end:]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_arbitrary_requests_are_refused_and_queue_nothing(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    extra = {"per_source": {"WEBHOOK_TOPICS_SNS": "arn:aws:sns:*:000000000000:none"}}
    client = make_client(**case.config(case.make_key("k1"), **extra))
    foreign = case.signed(case.make_key("fuzz-other"), "evt_f", int(time.time()))
    names = sorted({*foreign.headers, *(n for h in case.malformed for n in h), "Content-Type"})
    bodies = st.one_of(
        st.binary(max_size=300),
        st.sampled_from(SAMPLE_BODIES),
        st.just(foreign.body),
        mutated(foreign.body),
    )

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        headers=st.dictionaries(st.sampled_from(names), header_value, max_size=len(names)),
        body=bodies,
    )
    def check(headers: dict[str, str], body: bytes) -> None:
        raw = {name: value.encode("latin-1") for name, value in headers.items()}
        response = client.post(f"/webhooks/{case.name}", content=body, headers=raw)
        # 503 only where a key is fetched (a mutated certificate URL may name a closed port).
        allowed = (400, 401, 413) + ((503,) if case.provider in FETCHERS else ())
        assert response.status_code in allowed, (response.status_code, response.text)

    check()
    assert stored(redis) == []


HANDSHAKES = [c for c in CASES if c.provider in ("meta", "dropbox", "braintree")]


@pytest.mark.parametrize("case", HANDSHAKES, ids=[c.name for c in HANDSHAKES])
def test_arbitrary_get_handshakes_never_fail_and_queue_nothing(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client(**case.config(case.make_key("k1")))
    keys = ["hub.mode", "hub.verify_token", "hub.challenge", "challenge", "bt_challenge", "x"]

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(query=st.dictionaries(st.sampled_from(keys), st.text(max_size=60), max_size=4))
    def check(query: dict[str, str]) -> None:
        response = client.get(f"/webhooks/{case.name}", params=query)
        assert response.status_code in (200, 400, 403), (response.status_code, response.text)
        if response.status_code == 200 and case.provider == "meta":
            assert query.get("hub.verify_token") == "verify-me-please"

    check()
    assert stored(redis) == []


# --- JSON type confusion -----------------------------------------------------------------
# Byte mutations almost never change a JSON value's type, which is where parsers break
# (`x in {...}` on a list, `.get` on a string). These replace values of a real body with
# values of every other JSON type (`json_types`).

# Every case but the two whose bodies are forms.
JSON_CASES = [c for c in CASES if c.provider not in ("twilio", "braintree")]
# The providers that read the body before its signature is checked: the signature is in
# it (Mailgun, Adyen, SNS). Plaid reads its token's JSON header and claims first.
PARSED_FIRST = [BY_NAME[name] for name in ("sns", "adyen", "mailgun")]
SIGNED_IN_BODY = ("sns", "adyen", "mailgun")
# What these providers leave unsigned, by their design: changing it keeps the signature.
UNSIGNED: dict[str, tuple[JsonPath, ...]] = {
    "sns": (("UnsubscribeURL",),),
    "adyen": (("live",),),
    "mailgun": (("event-data",),),
}
signing_dumps = signing.dumps


def unsigned(provider: str, path: JsonPath) -> bool:
    return any(path[: len(prefix)] == prefix for prefix in UNSIGNED.get(provider, ()))


def same_signed_text(provider: str, original: object, new: object) -> bool:
    """Adyen signs `success` as text: a boolean true is the "true" it stands for."""
    return provider == "adyen" and isinstance(new, bool) and original == str(new).lower()


def refused_or_accepted(case: Case, response: Any, *, signed: bool = False) -> bool:
    """A 401 is allowed only where the change may have touched the signature itself."""
    refusals = (400, 413) if signed and case.provider not in SIGNED_IN_BODY else (400, 401, 413)
    allowed = (200, *refusals) + ((503,) if case.provider in FETCHERS else ())
    return response.status_code in allowed


def post_request(client: TestClient, case: Case, request: Request) -> Any:
    return client.post(
        request.url(case.name).removeprefix("http://testserver"),
        content=request.body,
        headers=request.headers,
    )


def check_unsigned_change(
    client: TestClient, case: Case, valid: Request, changes: list[tuple[int, object]]
) -> None:
    """A valid request with values of its body replaced, its signature kept: refused, never
    a 500, unless every change was to what the provider leaves unsigned."""
    original = json.loads(valid.body)
    body, touched = apply(original, changes)
    response = post_request(client, case, replace(valid, body=json.dumps(body).encode()))
    assert refused_or_accepted(case, response), (touched, response.status_code, response.text)
    if response.status_code == 200:
        assert all(
            unsigned(case.provider, path)
            or same_signed_text(case.provider, json_at(original, path), json_at(body, path))
            for path in touched
        ), ("accepted without a valid signature", touched, response.text)


def check_signed_change(
    client: TestClient, case: Case, key: Key, changes: list[tuple[int, object]]
) -> None:
    """The provider signs a body whose values were replaced: whatever it says, never a 500."""
    with patch.object(signing, "dumps", lambda value: signing_dumps(apply(value, changes)[0])):
        request = case.signed(key, "evt_t")
    response = post_request(client, case, request)
    assert refused_or_accepted(case, response, signed=True), (
        changes,
        response.status_code,
        response.text,
    )


@pytest.mark.parametrize("case", PARSED_FIRST, ids=[c.name for c in PARSED_FIRST])
def test_every_value_of_a_body_read_before_its_signature_replaced_by_every_type(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    valid = case.signed(key, "evt_sweep")
    count = len(json_paths(json.loads(valid.body)))
    for where in range(count):
        for new in REPRESENTATIVES:
            check_unsigned_change(client, case, valid, [(where, new)])


@pytest.mark.parametrize("case", PARSED_FIRST, ids=[c.name for c in PARSED_FIRST])
def test_values_of_a_body_read_before_its_signature_replaced_at_random(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    valid = case.signed(key, "evt_random")

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(changes=replacements)
    def check(changes: list[tuple[int, object]]) -> None:
        check_unsigned_change(client, case, valid, changes)

    check()


def plaid_token_with(token: str, part: int, changes: list[tuple[int, object]]) -> str:
    parts = token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(parts[part] + "=" * (-len(parts[part]) % 4)))
    value, _ = apply(decoded, changes)
    encoded = json.dumps(value, separators=(",", ":")).encode()
    parts[part] = base64.urlsafe_b64encode(encoded).rstrip(b"=").decode()
    return ".".join(parts)


@pytest.mark.parametrize("part", [0, 1], ids=["header", "claims"])
def test_every_value_of_plaids_token_replaced_by_every_type_is_refused(
    part: int, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    case = BY_NAME["plaid"]
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    valid = case.signed(key, "item_t")
    token = valid.headers["Plaid-Verification"]

    def check(changes: list[tuple[int, object]]) -> None:
        changed = plaid_token_with(token, part, changes)
        response = post_request(
            client, case, replace(valid, headers={"Plaid-Verification": changed})
        )
        assert response.status_code in (400, 401), (changes, response.status_code, response.text)

    segment = token.split(".")[part]
    count = len(json_paths(json.loads(base64.urlsafe_b64decode(segment + "==="))))
    for where in range(count):
        for new in REPRESENTATIVES:
            check([(where, new)])
    settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )(given(changes=replacements)(check))()
    assert [k for k in redis.keys("*") if not k.startswith(b"webhook:timeline:")] == []


@pytest.mark.parametrize("case", JSON_CASES, ids=[c.name for c in JSON_CASES])
def test_a_signed_body_with_values_of_every_type_is_never_a_500(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    template = json.loads(case.signed(key, "evt_t").body)
    for where in range(len(json_paths(template))):
        for new in REPRESENTATIVES:
            check_signed_change(client, case, key, [(where, new)])

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(changes=replacements)
    def check(changes: list[tuple[int, object]]) -> None:
        check_signed_change(client, case, key, changes)

    check()
