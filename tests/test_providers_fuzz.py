"""Property-based: whatever headers and body arrive, no 500 and nothing unsigned accepted."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from unittest.mock import patch

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from tests import signers
from tests.providers.json_types import REPRESENTATIVES, apply, json_paths, replacements
from tests.signers import CASES, Case

# The headers each scheme reads, so the fuzzer spends its time where parsing happens.
HEADERS = {
    "hmac": ["X-Signature-256"],
    "stripe": ["Stripe-Signature"],
    "github": ["X-Hub-Signature-256", "X-GitHub-Delivery", "X-GitHub-Event", "Content-Type"],
    "shopify": ["X-Shopify-Hmac-Sha256", "X-Shopify-Event-Id", "X-Shopify-Topic"],
    "slack": ["X-Slack-Signature", "X-Slack-Request-Timestamp"],
    "paddle": ["Paddle-Signature"],
    "standard": [
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "svix-id",
        "svix-timestamp",
        "svix-signature",
    ],
}
# Pieces of real header syntax, recombined at random.
TOKENS = [
    "t=",
    "v1=",
    "v0=",
    "h1=",
    "ts=",
    "sha256=",
    "v1,",
    ",",
    ";",
    " ",
    "=",
    "whsec_",
    "1700000000",
    "-1",
    "99999999999999999999",
    "a" * 64,
    "0" * 64,
    "YWJj",
    "=" * 4,
    "\t",
    "é",
    "%00",
]
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=120)
header_value = st.one_of(
    header_text,
    st.lists(st.sampled_from(TOKENS), max_size=8).map("".join),
)
bodies = st.one_of(
    st.binary(max_size=300),
    st.sampled_from(
        [
            b"{}",
            b'{"id": "e", "type": "x", "event_id": "e"}',
            b"[]",
            b"null",
            b'{"type": "url_verification", "challenge": "c"}',
            b"\xff\xfe{",
        ]
    ),
)


@pytest.mark.parametrize("case", CASES[:-1], ids=[c.provider for c in CASES[:-1]])
def test_arbitrary_requests_are_refused_with_4xx_and_queue_nothing(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client(**case.settings(case.make_secret("k1")))
    names = HEADERS[case.provider]

    @settings(
        max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        headers=st.dictionaries(st.sampled_from(names), header_value, max_size=len(names)),
        body=bodies,
    )
    def check(headers: dict[str, str], body: bytes) -> None:
        # As bytes, so values outside ASCII reach the server as they would off the wire.
        raw = {name: value.encode("latin-1") for name, value in headers.items()}
        response = client.post(f"/webhooks/{case.name}", content=body, headers=raw)
        assert response.status_code in (400, 401, 413), (response.status_code, response.text)

    check()
    # Nothing but the Events page's count of refusals, which the receiver adds every 5 s.
    assert [k for k in redis.keys("*") if not k.startswith(b"webhook:timeline:")] == []


class _TypeChangingJson:
    """Stands in for `json` in `tests.signers`: the body a signer serialises has values
    replaced by values of other JSON types before it is signed."""

    def __init__(self, changes: list[tuple[int, object]]) -> None:
        self.changes = changes

    def dumps(self, value: object, **options: Any) -> str:
        return json.dumps(apply(value, self.changes)[0], **options)


def post_signed_with_changes(
    client: TestClient, case: Case, secret: str, changes: list[tuple[int, object]]
) -> Any:
    with patch.object(signers, "json", _TypeChangingJson(changes)):
        signed = case.signed(secret, "evt_t")
    return client.post(f"/webhooks/{case.name}", content=signed.body, headers=signed.headers)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_signed_body_with_values_of_every_type_is_never_a_500(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    # These schemes verify the bytes before parsing them: only a signed body reaches the
    # parser, so the sender signs the changed body.
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    template = json.loads(case.signed(secret, "evt_t").body)
    for where in range(len(json_paths(template))):
        for new in REPRESENTATIVES:
            response = post_signed_with_changes(client, case, secret, [(where, new)])
            assert response.status_code in (200, 400, 413), (where, new, response.text)

    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(changes=replacements)
    def check(changes: list[tuple[int, object]]) -> None:
        response = post_signed_with_changes(client, case, secret, changes)
        assert response.status_code in (200, 400, 413), (changes, response.text)

    check()
