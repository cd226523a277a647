"""Property-based, for every added provider: whatever headers and body arrive, no 500 and
nothing accepted that the source's key did not sign.

Bodies are random bytes, or a real request of the provider signed with *another* key and
then mutated, so the parsers of schemes that sign inside the body (Mailgun, Adyen,
Braintree, SNS) meet realistic shapes. The SNS source accepts no topic the fake signs for,
so even a mutation that still verifies is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from tests.providers.cases import CASES, Case

TOKENS = [
    "t=",
    "v1=",
    "v0=",
    "sha256=",
    "sha1=",
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
    "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ",
    "2019-11-16T10:11:12.634234626Z",
    "é",
    "\t",
    "%00",
]
header_value = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=120),
    st.lists(st.sampled_from(TOKENS), max_size=8).map("".join),
)


@st.composite
def mutated(draw: st.DrawFn, body: bytes) -> bytes:
    """The body with up to 8 bytes somewhere replaced by up to 8 others."""
    start = draw(st.integers(0, len(body)))
    end = draw(st.integers(start, min(len(body), start + 8)))
    return body[:start] + draw(st.binary(max_size=8)) + body[end:]


@pytest.mark.parametrize("case", CASES, ids=[c.provider for c in CASES])
def test_arbitrary_requests_are_refused_and_queue_nothing(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    extra = {"per_source": {"WEBHOOK_TOPICS_SNS": "arn:aws:sns:*:000000000000:none"}}
    client = make_client(**case.config(case.make_key("k1"), **extra))
    foreign = case.signed(case.make_key("fuzz-other"), "evt_f", int(time.time()))
    names = sorted({*foreign.headers, *(n for h in case.malformed for n in h), "Content-Type"})
    bodies = st.one_of(st.binary(max_size=300), st.just(foreign.body), mutated(foreign.body))

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        headers=st.dictionaries(st.sampled_from(names), header_value, max_size=len(names)),
        body=bodies,
    )
    def check(headers: dict[str, str], body: bytes) -> None:
        raw = {name: value.encode("latin-1") for name, value in headers.items()}
        response = client.post(f"/webhooks/{case.provider}", content=body, headers=raw)
        # 503 only where a key is fetched (a mutated certificate URL may name a closed port).
        allowed = (400, 401, 403, 413) + ((503,) if case.provider in ("sns", "plaid") else ())
        assert response.status_code in allowed, (response.status_code, response.text)

    check()
    assert redis.keys("*") == []


HANDSHAKES = [c for c in CASES if c.provider in ("meta", "dropbox", "braintree")]


@pytest.mark.parametrize("case", HANDSHAKES, ids=[c.provider for c in HANDSHAKES])
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
        response = client.get(f"/webhooks/{case.provider}", params=query)
        assert response.status_code in (200, 400, 403), (response.status_code, response.text)
        if response.status_code == 200 and case.provider == "meta":
            assert query.get("hub.verify_token") == "verify-me-please"

    check()
    assert redis.keys("*") == []
