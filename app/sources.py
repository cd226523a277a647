"""The configured sources: `WEBHOOK_SOURCES` and the variables named after each source.

Per-source variables (`WEBHOOK_SECRET_<NAME>`, `REPLAY_TOLERANCE_<NAME>`,
`WEBHOOK_DEDUPE_TTL_<NAME>`, `WEBHOOK_EXPECTED_SILENCE_<NAME>`, and those only some
providers read, `PROVIDER_VARIABLES`)
have names that depend on `WEBHOOK_SOURCES`, so a custom settings source gathers them into
`Settings.per_source`, and `resolve_sources` turns each configured source into a
`SourceConfig`. A missing secret is a `ConfigError` that names the variable: never an open
door.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

# Per-source variables that only some providers read; each provider module says which.
PROVIDER_VARIABLES = (
    "WEBHOOK_RECIPE_",  # recipe: the scheme, as JSON
    "WEBHOOK_VERIFY_TOKEN_",  # meta: the verify token of the GET challenge
    "WEBHOOK_PUBLIC_KEY_",  # braintree: the public key(s) paired with the private key(s)
    "WEBHOOK_CLIENT_ID_",  # plaid: the API client id that fetches verification keys
    "WEBHOOK_API_BASE_",  # plaid: production or sandbox API
    "WEBHOOK_TOPICS_",  # sns: the topic ARNs (patterns) accepted
)
PER_SOURCE_PREFIXES = (
    "WEBHOOK_SECRET_",
    "REPLAY_TOLERANCE_",
    "WEBHOOK_DEDUPE_TTL_",
    "WEBHOOK_EXPECTED_SILENCE_",
    *PROVIDER_VARIABLES,
)
# Providers whose generated secrets hold commas (WooCommerce's come from WordPress's
# password characters): their secrets are given as a JSON list, never split on commas.
COMMA_SECRETS = frozenset({"woocommerce"})
# Providers that authenticate without a shared secret or key of the source's own.
KEYLESS = frozenset({"sns"})
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# The single-secret variable (WEBHOOK_SIGNING_SECRET) belongs to the default source.
LEGACY_SOURCE = "inbound"
# A source named without a provider uses the provider of its own name, except the default
# source, whose provider (`inbound:hmac`) is not called `inbound`.
DEFAULT_PROVIDER = {LEGACY_SOURCE: "hmac"}
# The placeholders of .env.example: `replace-me...`, `whsec_...`, `whsec_<base64>`. A secret
# left at one of them is public knowledge, so it stops startup like a missing one.
_PLACEHOLDER = re.compile(r"replace-me.*|.*\.\.\.|.*<[a-z0-9 _-]+>", re.IGNORECASE)


class ConfigError(Exception):
    """The configuration cannot run; the message names the variable to fix."""


def is_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value.strip()) is not None


def placeholder_message(variables: list[str]) -> str:
    """One message for every variable left at its placeholder: fixed all at once, not one
    restart each. Names only: a placeholder is public, but the message format is shared."""
    if len(variables) == 1:
        return f"{variables[0]} is still the placeholder from .env.example: set a real secret"
    named = ", ".join(variables[:-1]) + " and " + variables[-1]
    return f"{named} are still the placeholders from .env.example: set real secrets"


def check_not_placeholder(variable: str, value: str) -> None:
    if is_placeholder(value):
        raise ConfigError(placeholder_message([variable]))


@dataclass(frozen=True, slots=True)
class SourceConfig:
    name: str
    provider: str
    secrets: tuple[SecretStr, ...]
    tolerance: int
    dedupe_ttl: int
    # Seconds without an accepted event before the silence alert fires; 0: never
    # (`webhooks_source_expected_silence_seconds`, deploy/prometheus/webhook-alerts.yml).
    expected_silence: int = 0
    # REPLAY_TOLERANCE_<NAME> when set: it beats a provider's documented window, which
    # beats the global REPLAY_TOLERANCE.
    own_tolerance: int | None = None
    # The PROVIDER_VARIABLES set for this source, by prefix (never logged: may be secret).
    variables: Mapping[str, str] = field(default_factory=dict, repr=False)

    def variable_name(self, prefix: str) -> str:
        return prefix + env_suffix(self.name)

    def variable(self, prefix: str) -> str:
        """The stripped value of `<prefix><NAME>`, "" when unset."""
        return self.variables.get(prefix, "").strip()

    def window(self, documented: int | None) -> int:
        """The replay tolerance of a provider that documents its own `documented` window."""
        if self.own_tolerance is not None or documented is None:
            return self.tolerance
        return documented


def env_suffix(source: str) -> str:
    """`billing-eu` -> `BILLING_EU`, the suffix of that source's variables."""
    return source.upper().replace("-", "_")


class PerSourceVariables(PydanticBaseSettingsSource):
    """Gathers the per-source variables from the environment and the `.env` file."""

    def __init__(self, settings_cls: type[BaseSettings], env_file: Path | None) -> None:
        super().__init__(settings_cls)
        self.env_file = env_file

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, str] = {}
        if self.env_file is not None and self.env_file.is_file():
            found.update({k: v for k, v in dotenv_values(self.env_file).items() if v is not None})
        found.update(os.environ)
        picked = {k: v for k, v in found.items() if k.startswith(PER_SOURCE_PREFIXES)}
        # OpenTelemetry's own variables, which its SDK reads from the environment alone:
        # gathered here so that a `.env` line switches tracing on too (`app/tracing.py`).
        otel = {k: v for k, v in found.items() if k.startswith("OTEL_")}
        gathered: dict[str, Any] = {}
        if picked:
            gathered["per_source"] = picked
        if otel:
            gathered["otel"] = otel
        return gathered


@dataclass(frozen=True, slots=True)
class Defaults:
    """What a source inherits when it sets nothing of its own."""

    tolerance: int
    dedupe_ttl: int
    legacy_secret: SecretStr | None
    expected_silence: int = 0


def resolve_sources(
    entries: list[str],
    per_source: Mapping[str, str],
    defaults: Defaults,
    providers: Collection[str],
) -> dict[str, SourceConfig]:
    """Each entry of WEBHOOK_SOURCES as a `SourceConfig`; `providers` are the names a source
    may use (`app.providers.PROVIDERS`: the table lives with the verifiers, which import
    this module). An empty or repeated list is refused before, by
    `settings_checks.problems`, which resolves each entry on its own."""
    resolved: dict[str, SourceConfig] = {}
    for entry in entries:
        name, _, provider = entry.partition(":")
        name = name.strip()
        provider = provider.strip() or DEFAULT_PROVIDER.get(name, name)
        if not _SOURCE_NAME.match(name):
            raise ConfigError(
                f"WEBHOOK_SOURCES: {name!r} is not a valid source name "
                "(lowercase letters, digits, '-' and '_', at most 32 characters)"
            )
        if provider not in providers:
            raise ConfigError(
                f"WEBHOOK_SOURCES: source {name!r} names unknown provider {provider!r}; "
                f"known providers: {', '.join(providers)}"
            )
        suffix = env_suffix(name)
        own_tolerance = _int_of("REPLAY_TOLERANCE_", name, per_source, 0) or None
        resolved[name] = SourceConfig(
            name=name,
            provider=provider,
            secrets=(
                ()
                if provider in KEYLESS
                else _secrets_of(name, provider, per_source, defaults.legacy_secret)
            ),
            tolerance=own_tolerance or defaults.tolerance,
            dedupe_ttl=_int_of("WEBHOOK_DEDUPE_TTL_", name, per_source, defaults.dedupe_ttl),
            # 0 is allowed: a source that may stay quiet for ever is not an alert.
            expected_silence=_int_of(
                "WEBHOOK_EXPECTED_SILENCE_", name, per_source, defaults.expected_silence, least=0
            ),
            own_tolerance=own_tolerance,
            variables={
                prefix: per_source[prefix + suffix]
                for prefix in PROVIDER_VARIABLES
                if per_source.get(prefix + suffix, "").strip()
            },
        )
    return resolved


def _secrets_of(
    source: str, provider: str, per_source: Mapping[str, str], legacy: SecretStr | None
) -> tuple[SecretStr, ...]:
    variable = "WEBHOOK_SECRET_" + env_suffix(source)
    given = [(variable, per_source.get(variable, ""))]
    value = given[0][1].strip()
    if provider in COMMA_SECRETS and "," in value and not value.startswith("["):
        # Split, its fragments could each be long enough to pass as keys, and every
        # delivery would then be a 401 with nothing said at startup.
        raise ConfigError(
            f"{variable}: {provider} secrets may hold commas, so this one is not split: "
            f"write it as a JSON list, {variable}='[\"<secret>\"]' (several: "
            '["old", "new"])'
        )
    if source == LEGACY_SOURCE and legacy is not None:
        given.append(("WEBHOOK_SIGNING_SECRET", legacy.get_secret_value()))
    secrets = []
    for name, value in given:
        for part in split_secrets(name, value):
            check_not_placeholder(name, part)
            secrets.append(SecretStr(part))
    if not secrets:
        hint = " (or WEBHOOK_SIGNING_SECRET)" if source == LEGACY_SOURCE else ""
        raise ConfigError(
            f"{variable}{hint} is not set: source {source!r} cannot verify signatures "
            "without a secret"
        )
    return tuple(secrets)


def split_secrets(variable: str, value: str) -> list[str]:
    """The secrets of one variable: comma-separated (rotation), or, for secrets that hold a
    comma (WooCommerce generates such), a JSON list of strings, which is unambiguous."""
    text = value.strip()
    if not text.startswith("["):
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, list) or not all(isinstance(p, str) for p in parsed):
        raise ConfigError(
            f"{variable} starts with '[' but is not a JSON list of strings "
            '(write several secrets as ["first", "second"])'
        )
    return [part for part in parsed if part.strip()]


def _int_of(
    prefix: str, source: str, per_source: Mapping[str, str], default: int, least: int = 1
) -> int:
    variable = prefix + env_suffix(source)
    value = per_source.get(variable)
    if value is None or not value.strip():
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{variable} must be a whole number of seconds") from None
    if number < least:
        raise ConfigError(f"{variable} must be at least {least} second{'s' * (least != 1)}")
    return number
