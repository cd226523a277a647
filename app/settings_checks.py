"""What `Settings.load` checks once the variables have parsed: every source resolves and its
verifier builds, no secret is still a placeholder or shorter than its scheme's minimum,
Redis's address reads, and the settings agree with each other.

Every problem is found, not only the first: a copied `.env.example` with three placeholders
is one message naming all three, not three restarts. `problems` lists them (for `webhooks
config check`); `check_loaded` raises them as one `ConfigError`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import unquote

from pydantic import ValidationError

from app.keyfetch import KeyFetcher
from app.providers import PROVIDERS, verifier_for
from app.providers.secret_strength import check_secret_strength
from app.sources import (
    ConfigError,
    Defaults,
    SourceConfig,
    env_suffix,
    is_placeholder,
    placeholder_message,
    resolve_sources,
    split_secrets,
)

if TYPE_CHECKING:
    from app.settings import Settings

MIN_REPLAY_TOKEN_LENGTH = 32
# The settings that hold a secret of their own (per-source secrets are found by name).
SECRET_SETTINGS = (
    "WEBHOOK_SIGNING_SECRET",
    "WEBHOOK_REPLAY_TOKEN",
    "RQ_DASHBOARD_PASSWORD",
    "STRIPE_API_KEY",
    "GITHUB_TOKEN",
    "REDIS_SENTINEL_PASSWORD",
    "SENTRY_DSN",
)
# Per-source variables that hold a secret: the signing secret, and Meta's verify token.
SECRET_PREFIXES = ("WEBHOOK_SECRET_", "WEBHOOK_VERIFY_TOKEN_")
# OTLP's headers, of every signal (OTEL_EXPORTER_OTLP_HEADERS, _TRACES_HEADERS,
# _METRICS_HEADERS, _LOGS_HEADERS, and any the SDK adds), carry a collector's token
# (`authorization=Bearer ...`, `api-key=...`): every variable under this prefix naming HEADERS.
OTLP_PREFIX = "OTEL_EXPORTER_OTLP_"
# A URL's query option whose name ends with one of these (`_`, `-` and `.` left out, case
# ignored) carries a credential: `?api-key=`, `?access_token=`, redis-py's `?password=` and
# `?ssl_password=`, a signed URL's `&X-Amz-Signature=` or `&sig=`. Its value is never shown.
CREDENTIAL_OPTIONS = (
    "password",
    "passwd",
    "pass",
    "pwd",
    "passphrase",
    "token",
    "secret",
    "key",
    "auth",
    "authorization",
    "signature",
    "sig",
    "credential",
    "credentials",
    "session",
    "jwt",
    "bearer",
    "cookie",
)


def is_secret(name: str) -> bool:
    """A variable whose value is never shown, logged or written where it could be read."""
    upper = name.upper()
    return (
        name in SECRET_SETTINGS
        or name.startswith(SECRET_PREFIXES)
        or (upper.startswith(OTLP_PREFIX) and "HEADERS" in upper)
    )


def is_credential_option(name: str) -> bool:
    """A URL query option (`api-key` in `?api-key=...`) whose value is a credential."""
    return re.sub(r"[-_.\s]", "", name.lower()).endswith(CREDENTIAL_OPTIONS)


_QUERY_OPTION = re.compile(r"[?&;](?P<name>[^=&;?#/]*)=")


def credential_spans(text: str) -> list[tuple[int, int]]:
    """Where each credential option's value is in `text` (a URL, or text holding one): up to
    the next `&`, past a `;` or a `#` too, which may be part of it. What `config check`
    masks and what the redactor blanks, one rule for both."""
    spans, at = [], 0
    while (option := _QUERY_OPTION.search(text, at)) is not None:
        at = option.end()
        if is_credential_option(unquote(option["name"])):
            end = text.find("&", at)
            spans.append((at, len(text) if end < 0 else end))
            at = spans[-1][1]
    return spans


def one_line(error: ValidationError) -> str:
    """A pydantic error as one line per setting: the variable, what was expected; never the
    value given (it may be a secret)."""
    return "; ".join(validation_problems(error))


def validation_problems(error: ValidationError) -> list[str]:
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        variable = str(item["loc"][0]).upper() if item["loc"] else "configuration"
        message = item["msg"].removeprefix("Value error, ").removeprefix(f"{variable} ")
        parts.append(f"{variable}: {message}")
    # A list setting reports each bad item; one mention per problem is enough.
    return list(dict.fromkeys(parts))


def check_loaded(settings: Settings) -> None:
    """Raise every problem found, as one `ConfigError`."""
    found = problems(settings)
    if found:
        raise ConfigError("; ".join(found))


def problems(settings: Settings) -> list[str]:
    """Every reason these settings cannot run, one line each, never a value."""
    placeholders = placeholder_variables(settings)
    found = [placeholder_message(placeholders)] if placeholders else []
    sources, source_problems = _resolve_each(settings)
    # A placeholder secret also fails its source's resolution: said once, above.
    found += [p for p in source_problems if not p.startswith(tuple(placeholders))]
    found += _provider_problems(settings, sources)
    token = settings.webhook_replay_token
    if token is not None and len(token.get_secret_value()) < MIN_REPLAY_TOKEN_LENGTH:
        found.append(
            f"WEBHOOK_REPLAY_TOKEN must be at least {MIN_REPLAY_TOKEN_LENGTH} characters "
            "(it lets its holder enqueue unsigned events); leave it empty to disable replay"
        )
    try:
        settings.redis_target  # noqa: B018 - parsing is the validation
        settings.cluster_target  # noqa: B018
    except ConfigError as exc:
        found.append(str(exc))
    if settings.redis_cluster_nodes and settings.redis_sentinels:
        found.append("REDIS_CLUSTER_NODES and REDIS_SENTINELS: set only one")
    if (
        settings.webhook_replica_acks
        and settings.webhook_replica_ack_timeout >= settings.webhook_ack_timeout
    ):
        found.append(
            "WEBHOOK_REPLICA_ACK_TIMEOUT must be shorter than WEBHOOK_ACK_TIMEOUT: the "
            "replicas' acknowledgement is part of the answer's time"
        )
    return found


def placeholder_variables(settings: Settings) -> list[str]:
    """The variables still at a placeholder of .env.example, in the order a reader meets
    them: the configured sources' secrets, then the other secrets."""
    named = []
    for entry in settings.webhook_sources:
        name = entry.partition(":")[0].strip()
        variable = "WEBHOOK_SECRET_" + env_suffix(name)
        try:
            parts = split_secrets(variable, settings.per_source.get(variable, ""))
        except ConfigError:
            continue  # malformed, not a placeholder: the source's resolution says so
        if any(is_placeholder(part) for part in parts):
            named.append(variable)
    for variable in SECRET_SETTINGS:
        secret = getattr(settings, variable.lower())
        if secret is not None and is_placeholder(secret.get_secret_value()):
            named.append(variable)
    return list(dict.fromkeys(named))


def _resolve_each(settings: Settings) -> tuple[list[SourceConfig], list[str]]:
    """Each source on its own, so that one bad source does not hide the next one's problem."""
    if not settings.webhook_sources:
        return [], ["WEBHOOK_SOURCES is empty: configure at least one source"]
    defaults = Defaults(
        settings.replay_tolerance, settings.webhook_dedupe_ttl, settings.webhook_signing_secret
    )
    resolved: list[SourceConfig] = []
    found: list[str] = []
    named: set[str] = set()
    for entry in settings.webhook_sources:
        # By name, before resolving: a repeated source would repeat its own problems too.
        name = entry.partition(":")[0].strip()
        if name in named:
            found.append(f"WEBHOOK_SOURCES: source {name!r} is listed twice")
            continue
        named.add(name)
        try:
            [source] = resolve_sources([entry], settings.per_source, defaults, PROVIDERS).values()
        except ConfigError as exc:
            found.append(str(exc))
            continue
        resolved.append(source)
    return resolved, found


def _provider_problems(settings: Settings, sources: list[SourceConfig]) -> list[str]:
    """Build every source's verifier once, so a bad recipe, key or provider variable
    stops startup (of the workers too) with its one-line `ConfigError`."""
    fetcher = KeyFetcher.from_settings(settings)
    found = []
    for source in sources:
        try:
            # Once built, `keys` are the decoded keys the scheme signs with.
            check_secret_strength(source, verifier_for(source, fetcher).keys)
        except ConfigError as exc:
            found.append(str(exc))
    return found
