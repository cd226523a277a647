"""The settings the fixtures run with: the user's own, read from the environment and `.env`
as in production, with the test's `webhooks_settings` markers on top, and made-up secrets
and throwaway key pairs wherever a real one would be needed.

- A source with no secret configured gets one made for the test run, in the form its
  provider's verifier reads (`workers/dev/devsecrets.py`, as `make run` makes them): a
  test never needs a real secret, and a configured one is used as it is.
- The asymmetric providers (Discord, SendGrid, AWS SNS, Plaid) sign with a private key only
  the provider holds, so each such source always gets a key pair made in memory
  (`devkeys.throwaway_key`) and is configured with its public half; SNS and Plaid verifiers
  fetch that half from a key server on 127.0.0.1 (`workers/dev/keyserver.py`, the dev
  stack's), started for the test and added to WEBHOOK_FETCH_ALLOW.
Nothing made here is printed or written anywhere.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.providers.recipe_spec import Recipe
from app.settings import ConfigError, Settings
from app.settings_checks import one_line
from app.sources import LEGACY_SOURCE, PER_SOURCE_PREFIXES, env_suffix
from workers.dev.devkeys import SERVED, key_env
from workers.dev.devsecrets import RECIPE_FORM, SECRET_FORM, source_secret_makers, sources_of
from workers.dev.keypair import DevKey, throwaway_key
from workers.signing import PRIVATE_KEY_PROVIDERS

Serve = Callable[[Sequence[DevKey]], str]


class Secrets:
    """What the test run made up, once per run: a test's secret stays the same across its
    fixtures, and the slow part (an RSA key pair) is made once per source."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}
        self._keys: dict[tuple[str, str], DevKey] = {}

    def value(self, variable: str, make: Callable[[], str]) -> str:
        if variable not in self._values:
            self._values[variable] = make()
        return self._values[variable]

    def key(self, source: str, provider: str) -> DevKey:
        found = self._keys.get((source, provider))
        if found is None:
            found = self._keys[(source, provider)] = throwaway_key(source, provider)
        return found


@dataclass(frozen=True, slots=True)
class FixtureSettings:
    settings: Settings
    # Source name -> the private key its requests are signed with (asymmetric sources).
    keys: Mapping[str, DevKey] = field(default_factory=dict)
    key_server: str | None = None


def split_overrides(overrides: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A marker's keywords as settings fields and per-source variables. Either spelling is
    taken: `webhook_max_retries=0` or `WEBHOOK_MAX_RETRIES="0"`; per-source variables are
    named as in `.env` (`WEBHOOK_SECRET_SHOP="..."`)."""
    fields: dict[str, Any] = {}
    per_source: dict[str, str] = {}
    for name, value in overrides.items():
        if name.upper().startswith(PER_SOURCE_PREFIXES):
            per_source[name.upper()] = str(value)
        elif name.lower() in Settings.model_fields and name.lower() != "per_source":
            fields[name.lower()] = value
        else:
            raise ConfigError(
                f"webhooks_settings: {name!r} is not a setting of rq-webhook-receiver"
            )
    return fields, per_source


def load_test_settings(
    overrides: Mapping[str, Any], made: Secrets, serve: Serve
) -> FixtureSettings:
    """The user's settings with `overrides`, a made-up secret for each source that has
    none, and a throwaway key pair for each asymmetric source (served by `serve`, which
    starts a key server for the keys SNS and Plaid verifiers fetch, and returns its URL)."""
    fields, given = split_overrides(overrides)
    try:
        first = Settings(**fields)  # not `load`: its sources may still lack their secrets
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None
    per_source = {**first.per_source, **given}
    sources = sources_of(",".join(first.webhook_sources))
    for name, provider in sources:
        if provider not in PRIVATE_KEY_PROVIDERS:
            _fill_secrets(name, provider, per_source, first, made)
    keys = {name: made.key(name, p) for name, p in sources if p in PRIVATE_KEY_PROVIDERS}
    served = [key for key in keys.values() if key.provider in SERVED]
    key_server = serve(served) if served else None
    for key in keys.values():
        per_source.update(_key_variables(key, key_server, per_source))
    if key_server is not None:
        fields["webhook_fetch_allow"] = [*first.webhook_fetch_allow, key_server]
    settings = Settings.load(**fields, per_source=per_source)
    return FixtureSettings(settings, keys, key_server)


def _fill_secrets(
    name: str, provider: str, per_source: dict[str, str], first: Settings, made: Secrets
) -> None:
    suffix = env_suffix(name)
    if name == LEGACY_SOURCE:
        # `inbound` takes WEBHOOK_SIGNING_SECRET too; devsecrets leaves it to make run.
        if first.webhook_signing_secret is None and not per_source.get("WEBHOOK_SECRET_INBOUND"):
            maker = SECRET_FORM.get(provider, lambda: secrets.token_hex(24))
            per_source["WEBHOOK_SECRET_INBOUND"] = made.value("WEBHOOK_SECRET_INBOUND", maker)
        return
    for variable, maker in source_secret_makers([(name, provider)]).items():
        if per_source.get(variable, "").strip():
            continue
        if provider == "recipe" and variable.startswith("WEBHOOK_SECRET_"):
            maker = _recipe_maker(per_source.get("WEBHOOK_RECIPE_" + suffix, ""))
        per_source[variable] = made.value(f"{variable}:{provider}", maker)


def _recipe_maker(recipe: str) -> Callable[[], str]:
    """A secret in the recipe's `secret_encoding`, read from the recipe in force (a marker
    may give it); a recipe that does not load says so itself when the settings load."""
    try:
        encoding = Recipe.model_validate_json(recipe).secret_encoding
    except ValueError:
        return lambda: secrets.token_hex(24)
    return RECIPE_FORM[encoding]


def _key_variables(
    key: DevKey, key_server: str | None, per_source: Mapping[str, str]
) -> dict[str, str]:
    """What configures a source for its throwaway key. Unlike `make run`, which keeps a
    key the user configured, these always replace it: a test must sign, and only the
    provider holds the private half of a real key."""
    topics = per_source.get("WEBHOOK_TOPICS_" + env_suffix(key.source), "").strip()
    return key_env(key, key_server, topics)
