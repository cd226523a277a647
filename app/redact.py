"""Every secret the configuration holds, and a function that blanks them out of text.

`webhooks replay` quotes what providers' APIs answer, and an API may quote what it was sent
or anything else of ours ("Invalid API Key provided: sk_live_..."). Whatever the command
prints from outside goes through a `Redactor` built from the settings, so no configured
key, token, signing secret or password reaches a terminal, however it got into the text.
The dashboard's login log and the worker's Sentry events go through the same one: it is
here, with the settings it reads, because the worker may not import the operator's tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit

from pydantic import SecretStr

from app.settings import ConfigError, Settings
from app.settings_checks import credential_spans

MARKER = "[redacted]"
# Per-source variables whose values are secrets (verify tokens are shared secrets too),
# whether or not their source is still listed in WEBHOOK_SOURCES.
SECRET_VARIABLES = ("WEBHOOK_SECRET_", "WEBHOOK_VERIFY_TOKEN_")


def configured_secrets(settings: Settings) -> list[str]:
    """Every secret value of the settings: each secret field (found by type, so a new one is
    covered without a change here), every per-source secret and each part of a rotated
    list, and the passwords of REDIS_URL and of the API base URLs."""
    found: list[str] = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            found.append(value.get_secret_value())
    for variable, value in settings.per_source.items():
        if variable.startswith(SECRET_VARIABLES):
            found += [value, *value.split(",")]
    for variable, value in settings.otel.items():
        if variable.endswith("_HEADERS"):  # OTLP's: a collector's token
            found += [value, *(part.partition("=")[2] for part in value.split(","))]
    try:
        found += [
            s.get_secret_value() for source in settings.sources.values() for s in source.secrets
        ]
        found += settings.redis_target.secrets
    except (ConfigError, ValueError):
        pass  # a configuration that does not load has no command to print anything
    endpoints = [v for k, v in settings.otel.items() if k.endswith("_ENDPOINT")]
    for url in (settings.redis_url, settings.stripe_api_base, settings.github_api_base, *endpoints):
        found += url_credentials(url)
    return found


def url_credentials(url: str) -> list[str]:
    """A URL's password, and the values of its query options that carry a credential (a
    collector's `?api-key=` or `?access_token=`, a client key's `?ssl_password=`), taken
    as `config check` masks them (`credential_spans`), written and decoded."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    found = [password, unquote(password)] if password else []
    for start, end in credential_spans(url):
        found += [url[start:end], unquote(url[start:end])]
    return found


class Redactor:
    """Replaces each secret, as written and as it would appear percent-encoded or inside a
    JSON string, with MARKER. Longest first, so a secret that is part of another cannot
    leave the rest of the longer one behind."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            for value in (secret, secret.strip()):
                if value:
                    forms |= {value, quote(value, safe=""), json.dumps(value)[1:-1]}
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def of(cls, settings: Settings) -> Redactor:
        return cls(configured_secrets(settings))

    def __call__(self, text: str) -> str:
        return self._pattern.sub(MARKER, text) if self._pattern is not None else text
