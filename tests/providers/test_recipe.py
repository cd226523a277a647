"""The declarative recipe: docs/providers.md's worked example runs as written, the named presets
are recipes a user could write, and a recipe that cannot work stops startup naming the
field."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dotenv import dotenv_values
from fastapi.testclient import TestClient
from pydantic import SecretStr
from redis import Redis
from rq import Queue

from app.errors import InvalidPayload, InvalidSignature, StaleTimestamp
from app.keyfetch import KeyFetcher
from app.providers import VERIFIERS, Inbound, verifier_for
from app.providers.presets import PRESETS
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.settings import ConfigError, SourceConfig
from tests.providers.cases import BY_NAME

PROVIDERS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
ClientFactory = Callable[..., TestClient]


def readme_block(marker: str) -> str:
    text = PROVIDERS_PAGE.read_text()
    found = re.search(rf"<!-- {marker} -->\n```\w+\n(.*?)```\n<!-- /{marker} -->", text, re.S)
    assert found, marker
    return found.group(1)


def example_settings() -> dict[str, Any]:
    values = {
        k: v or ""
        for k, v in dotenv_values(stream=io.StringIO(readme_block("recipe-example"))).items()
    }
    return {"webhook_sources": values.pop("WEBHOOK_SOURCES"), "per_source": values}


def example_request() -> tuple[dict[str, str], bytes]:
    head, _, body = readme_block("recipe-request").partition("\n\n")
    headers = dict(line.split(": ", 1) for line in head.splitlines()[1:])
    return headers, body.strip("\n").encode()


def recipe_verifier(recipe: str, secret: str = "k", name: str = "acme") -> RecipeVerifier:
    source = SourceConfig(
        name, "recipe", (SecretStr(secret),), 300, 86400, variables={"WEBHOOK_RECIPE_": recipe}
    )
    verifier = verifier_for(source, KeyFetcher([], 1.0))
    assert isinstance(verifier, RecipeVerifier)
    return verifier


def test_the_readme_example_verifies_the_readme_request() -> None:
    config = example_settings()
    headers, body = example_request()
    secret = config["per_source"]["WEBHOOK_SECRET_ACME"]
    verifier = recipe_verifier(config["per_source"]["WEBHOOK_RECIPE_ACME"], secret)
    lowered = {k.lower(): v for k, v in headers.items()}
    delivery = verifier.check(Inbound("POST", "", "", lowered, body, 1_700_000_000.0))
    assert (delivery.event_id, delivery.event_type) == ("dlv_01", "invoice.paid")
    with pytest.raises(StaleTimestamp):
        verifier.check(Inbound("POST", "", "", lowered, body, 1_700_000_400.0))


def test_the_readme_example_source_accepts_acme_requests_through_the_app(
    make_client: ClientFactory, redis: Redis
) -> None:
    config = example_settings()
    secret = config["per_source"]["WEBHOOK_SECRET_ACME"].encode()
    client = make_client(**config)
    body = b'{"kind":"invoice.paid","invoice":"in_2"}'
    ts = int(time.time())
    signature = hmac.new(secret, f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    headers = {"X-Acme-Signature": f"t={ts},v1={signature}", "X-Acme-Delivery": "dlv_02"}
    first = client.post("/webhooks/acme", content=body, headers=headers)
    again = client.post("/webhooks/acme", content=body, headers=headers)
    assert first.json() == {"status": "accepted", "id": "dlv_02"}
    assert again.json() == {"status": "duplicate", "id": "dlv_02"}
    [job] = Queue("webhooks", connection=redis).get_jobs()
    assert job.meta["type"] == "invoice.paid" and job.args[4] == {"x-acme-delivery": "dlv_02"}
    forged = {**headers, "X-Acme-Signature": f"t={ts},v1=" + "0" * 64}
    assert client.post("/webhooks/acme", content=body, headers=forged).status_code == 401


RECIPE_PRESETS = sorted(
    name
    for name, cls in VERIFIERS.items()
    if issubclass(cls, RecipeVerifier) and cls.preset is not None
)


def test_the_pure_presets_are_the_ones_the_readme_names() -> None:
    assert sorted(PRESETS) == sorted(
        [
            "intercom",
            "typeform",
            "lemonsqueezy",
            "razorpay",
            "sentry",
            "pagerduty",
            "zendesk",
            "calendly",
            "linear",
            "square",
            "resend",
            "clerk",
        ]
    )
    assert len(RECIPE_PRESETS) == 22  # and ten providers whose verifier runs a recipe of its own


@pytest.mark.parametrize("name", RECIPE_PRESETS)
def test_a_preset_is_the_recipe_a_user_would_write(
    name: str, make_client: ClientFactory, redis: Redis
) -> None:
    preset = VERIFIERS[name].preset  # type: ignore[attr-defined]
    written = preset.to_json()
    assert Recipe.model_validate_json(written) == preset
    case = BY_NAME[name]
    key = case.make_key("k1")
    config = case.config(key)
    # The same source name (Square signs the URL), with provider `recipe`.
    config["webhook_sources"] = f"{name}:recipe"
    config["per_source"][f"WEBHOOK_RECIPE_{name.upper()}"] = written
    signed = case.signed(key, "evt-7")
    response = make_client(**config).post(
        f"/webhooks/{name}", content=signed.body, headers=signed.headers
    )
    assert response.status_code == 200, response.text
    [job] = Queue("webhooks", connection=redis).get_jobs()
    if VERIFIERS[name].event_id is RecipeVerifier.event_id:  # HubSpot reads batch ids itself
        assert (job.meta["event_id"], job.meta["type"]) == (signed.event_id, case.event_type)


BASE = {"signature_header": "X-Sig", "id": "header:X-Id"}


@pytest.mark.parametrize(
    ("recipe", "field"),
    [
        ({**BASE, "algorithm": "md5"}, "'algorithm'"),
        ({**BASE, "sigheader": "x"}, "'sigheader'"),
        ({**BASE, "signed": "{timestamp}.{body}"}, "'timestamp'"),
        ({**BASE, "signed": "{timestamp}"}, "{body}"),
        ({**BASE, "signed": "{body}{nonce}"}, "{nonce}"),
        ({**BASE, "id": "cookie:x"}, "'id'"),
        ({**BASE, "id": []}, "'id'"),
        ({"id": "digest"}, "'signature_header'"),
        ({**BASE, "tolerance": 0}, "'tolerance'"),
        ({**BASE, "timestamp": "signature:t"}, "'signature_key'"),
        ({**BASE, "signature_key": "v1"}, "'signature_separator'"),
        ({**BASE, "signed": "{id}{body}", "id": "json:id"}, "'id'"),
        ({**BASE, "type": "digest"}, "'type'"),
        ({**BASE, "id": "const:x"}, "'id'"),
        ({**BASE, "id": "signature:id"}, "'signature_key'"),
        ({**BASE, "headers": ["X-Sig"]}, "'headers'"),
        ({**BASE, "encoding": "base32"}, "'encoding'"),
        ({**BASE, "timestamp": 5}, "'timestamp'"),
        ({**BASE, "id": "digest:x"}, "'id'"),
        ({**BASE, "type": "header"}, "'type'"),
        ({**BASE, "signed": "{timestamp}.{body}", "timestamp": "const:1"}, "'timestamp' comes"),
        ({**BASE, "signed": "{body"}, "'signed'"),
    ],
)
def test_an_invalid_recipe_stops_startup_naming_the_field(
    recipe: dict[str, Any], field: str, make_settings: Callable[..., Any]
) -> None:
    per_source = {"WEBHOOK_SECRET_ACME": "k", "WEBHOOK_RECIPE_ACME": json.dumps(recipe)}
    with pytest.raises(ConfigError) as raised:
        make_settings(webhook_sources="acme:recipe", per_source=per_source)
    message = str(raised.value)
    assert message.startswith("WEBHOOK_RECIPE_ACME: ") and field in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    "recipe",
    [
        {**BASE, "timestamp": "header:X-Ts"},
        {**BASE, "signature_key": "v1", "signature_separator": ",", "timestamp": "signature:t"},
    ],
)
def test_a_recipe_whose_timestamp_is_not_signed_stops_startup(
    recipe: dict[str, Any], make_settings: Callable[..., Any]
) -> None:
    # The attacker's side: the window would read a timestamp the sender can rewrite, so a
    # captured request re-sent with a fresh one would pass it.
    per_source = {"WEBHOOK_SECRET_ACME": "k", "WEBHOOK_RECIPE_ACME": json.dumps(recipe)}
    with pytest.raises(ConfigError) as raised:
        make_settings(webhook_sources="acme:recipe", per_source=per_source)
    message = str(raised.value)
    assert message.startswith("WEBHOOK_RECIPE_ACME: ") and "is not signed" in message, message
    assert "\n" not in message


def test_a_recipe_source_without_its_recipe_or_with_bad_json_stops_startup(
    make_settings: Callable[..., Any],
) -> None:
    with pytest.raises(ConfigError, match="WEBHOOK_RECIPE_ACME is not set"):
        make_settings(webhook_sources="acme:recipe", per_source={"WEBHOOK_SECRET_ACME": "k"})
    with pytest.raises(ConfigError, match=r"WEBHOOK_RECIPE_ACME: .*JSON"):
        make_settings(
            webhook_sources="acme:recipe",
            per_source={"WEBHOOK_SECRET_ACME": "k", "WEBHOOK_RECIPE_ACME": "{header: x"},
        )


def test_a_secret_not_in_the_recipes_encoding_stops_startup_without_showing_it(
    make_settings: Callable[..., Any],
) -> None:
    recipe = json.dumps({**BASE, "secret_encoding": "whsec"})
    per_source = {"WEBHOOK_SECRET_ACME": "whsec_not*base64!", "WEBHOOK_RECIPE_ACME": recipe}
    with pytest.raises(ConfigError, match=r"^WEBHOOK_SECRET_ACME: not a valid whsec secret$"):
        make_settings(webhook_sources="acme:recipe", per_source=per_source)


def sign(key: bytes, message: bytes, algorithm: str = "sha256") -> bytes:
    return hmac.new(key, message, algorithm).digest()


def test_sha512_base64_space_separated_signatures_with_a_method_and_url() -> None:
    verifier = recipe_verifier(
        json.dumps(
            {
                "signature_header": "Sig",
                "signature_separator": " ",
                "signature_prefix": "v1,",
                "algorithm": "sha512",
                "encoding": "base64",
                "signed": "{method} {url}\n{body}",
                "secret_encoding": "base64",
                "id": ["header:Delivery", "digest"],
            }
        ),
        secret="c2VjcmV0",  # base64 of "secret"
    )
    body = b'{"a": 1}'
    good = base64.b64encode(sign(b"secret", b"PUT https://x/y?z=1\n" + body, "sha512")).decode()
    headers = {"sig": f"v2,AAAA v1,!!! v1,{good}"}
    delivery = verifier.check(Inbound("PUT", "https://x/y?z=1", "z=1", headers, body, 0.0))
    assert delivery.event_id == "sha256:" + hashlib.sha256(body).hexdigest()
    with pytest.raises(InvalidSignature):
        verifier.check(Inbound("POST", "https://x/y?z=1", "z=1", headers, body, 0.0))


def test_a_json_timestamp_in_milliseconds_is_checked_after_the_signature() -> None:
    verifier = recipe_verifier(
        json.dumps(
            {
                "signature_header": "Sig",
                "timestamp": "json:meta.sent",
                "timestamp_unit": "ms",
                "tolerance": 60,
                "id": "json:meta.id",
                "type": ["json:kind", "const:unknown"],
            }
        )
    )
    body = b'{"meta": {"sent": 1700000000000, "id": 7}}'
    headers = {"sig": sign(b"k", body).hex()}
    delivery = verifier.check(Inbound("POST", "", "", headers, body, 1_700_000_030.0))
    assert (delivery.event_id, delivery.event_type) == ("7", "unknown")
    with pytest.raises(StaleTimestamp):
        verifier.check(Inbound("POST", "", "", headers, body, 1_700_000_090.0))
    undated = b'{"meta": {"id": 7}}'
    with pytest.raises(InvalidPayload):
        verifier.check(Inbound("POST", "", "", {"sig": sign(b"k", undated).hex()}, undated, 0.0))


def test_a_form_recipe_hands_the_worker_a_form() -> None:
    verifier = recipe_verifier(
        json.dumps(
            {"signature_header": "Sig", "payload": "form", "id": "json:id", "type": "json:t"}
        )
    )
    body = b"id=42&t=ping"
    delivery = verifier.check(Inbound("POST", "", "", {"sig": sign(b"k", body).hex()}, body, 0.0))
    assert (delivery.event_id, delivery.event_type, delivery.payload_format) == (
        "42",
        "ping",
        "form",
    )


def test_an_id_signed_inside_the_signature_header() -> None:
    verifier = recipe_verifier(
        json.dumps(
            {
                "signature_header": "Sig",
                "signature_separator": ";",
                "signature_key": "s",
                "signed": "{id}:{body}",
                "id": "signature:id",
            }
        )
    )
    body = b"{}"
    headers = {"sig": f"id=d-9;s={sign(b'k', b'd-9:' + body).hex()}"}
    assert verifier.check(Inbound("POST", "", "", headers, body, 0.0)).event_id == "d-9"
    forged = {"sig": headers["sig"].replace("id=d-9", "id=d-8")}
    with pytest.raises(InvalidSignature):
        verifier.check(Inbound("POST", "", "", forged, body, 0.0))
