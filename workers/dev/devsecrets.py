"""Development secrets for the sources `make run` serves that have none configured, in the
form each provider's verifier reads (hex, `whsec_` + base64, a key pair's public half...),
so that `webhooks send SOURCE` works against the dev stack for every configured source.

They join the other development credentials in var/dev.env (mode 600, never printed);
whatever the environment or `.env` sets wins. The asymmetric providers' key pairs are
`devkeys.py`'s: a private key has no place in an environment file.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from pathlib import Path

from app.providers.recipe_spec import SecretEncoding
from app.sources import DEFAULT_PROVIDER, KEYLESS, env_suffix
from workers.dev.stackfile import configured_value

Maker = Callable[[], str]


def _hex() -> str:
    return secrets.token_hex(24)


def _whsec() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def _alnum(length: int) -> Maker:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return lambda: "".join(secrets.choice(alphabet) for _ in range(length))


# How each provider's secret looks where it is not a plain random string. The others get
# 48 hex characters, which every such verifier takes as it is.
SECRET_FORM: dict[str, Maker] = {
    "stripe": lambda: "whsec_" + secrets.token_hex(16),
    "paddle": lambda: "pdl_ntfset_" + secrets.token_hex(16),
    "shopify": lambda: "shpss_" + secrets.token_hex(16),
    "standard": _whsec,
    "resend": _whsec,
    "clerk": _whsec,
    "adyen": lambda: secrets.token_hex(32).upper(),
    "braintree": _alnum(32),
    "dropbox": _alnum(15),
}
RECIPE_FORM: dict[SecretEncoding, Maker] = {
    SecretEncoding.RAW: _hex,
    SecretEncoding.HEX: _hex,
    SecretEncoding.BASE64: lambda: base64.b64encode(secrets.token_bytes(24)).decode(),
    SecretEncoding.WHSEC: _whsec,
}
# Made by devkeys.py (a key pair each), or not needed at all (SNS).
NOT_HERE = frozenset({"discord", "sendgrid", "plaid"}) | KEYLESS


def sources_of(value: str) -> list[tuple[str, str]]:
    """WEBHOOK_SOURCES as (name, provider) pairs, read as the settings read them."""
    pairs = []
    for entry in value.split(","):
        name, _, provider = entry.strip().partition(":")
        name = name.strip()
        if name:
            pairs.append((name, provider.strip() or DEFAULT_PROVIDER.get(name, name)))
    return pairs


def configured_sources(root: Path = Path()) -> list[tuple[str, str]]:
    return sources_of(configured_value("WEBHOOK_SOURCES", root) or "inbound:hmac")


def source_secret_makers(sources: list[tuple[str, str]]) -> dict[str, Maker]:
    """Variable -> how to make its value, for every source's secret (and Braintree's public
    key, Meta's verify token). The caller keeps those already configured or already made."""
    wanted: dict[str, Maker] = {}
    for name, provider in sources:
        if provider in NOT_HERE or name == "inbound":  # inbound: WEBHOOK_SIGNING_SECRET
            continue
        suffix = env_suffix(name)
        wanted["WEBHOOK_SECRET_" + suffix] = SECRET_FORM.get(provider, _hex)
        if provider == "recipe":
            wanted["WEBHOOK_SECRET_" + suffix] = _recipe_maker(suffix)
        if provider == "braintree":
            wanted["WEBHOOK_PUBLIC_KEY_" + suffix] = _alnum(16)
        if provider == "meta":  # the token typed next to the callback URL
            wanted["WEBHOOK_VERIFY_TOKEN_" + suffix] = _hex
    return wanted


def _recipe_maker(suffix: str) -> Maker:
    """A secret in the recipe's `secret_encoding` (raw when the recipe does not load: its
    own error then stops startup, naming the field)."""

    def make() -> str:
        from app.providers.recipe_spec import Recipe

        text = configured_value("WEBHOOK_RECIPE_" + suffix)
        try:
            encoding = Recipe.model_validate_json(text).secret_encoding
        except ValueError:
            encoding = SecretEncoding.RAW
        return RECIPE_FORM[encoding]()

    return make
