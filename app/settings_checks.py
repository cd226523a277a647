"""What `Settings.load` checks once the variables have parsed: every source resolves and its
verifier builds, no secret is still a placeholder or shorter than its scheme's minimum,
Redis's address reads, and the settings agree with each other. Each problem is a one-line
`ConfigError` naming the variable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError

from app.sources import ConfigError, check_not_placeholder

if TYPE_CHECKING:
    from app.settings import Settings

MIN_REPLAY_TOKEN_LENGTH = 32


def one_line(error: ValidationError) -> str:
    """A pydantic error as one line per setting: the variable, what was expected; never the
    value given (it may be a secret)."""
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        variable = str(item["loc"][0]).upper() if item["loc"] else "configuration"
        message = item["msg"].removeprefix("Value error, ").removeprefix(f"{variable} ")
        parts.append(f"{variable}: {message}")
    # A list setting reports each bad item; one mention per problem is enough.
    return "; ".join(dict.fromkeys(parts))


def check_loaded(settings: Settings) -> None:
    """Raise the first problem found, as a `ConfigError`."""
    settings.sources  # noqa: B018 - resolving is the validation
    _check_secrets(settings)
    _check_providers(settings)
    settings.redis_target  # noqa: B018 - parsing is the validation
    if (
        settings.webhook_replica_acks
        and settings.webhook_replica_ack_timeout >= settings.webhook_ack_timeout
    ):
        raise ConfigError(
            "WEBHOOK_REPLICA_ACK_TIMEOUT must be shorter than WEBHOOK_ACK_TIMEOUT: the "
            "replicas' acknowledgement is part of the answer's time"
        )


def _check_providers(settings: Settings) -> None:
    """Build every source's verifier once, so a bad recipe, key or provider variable
    stops startup (of the workers too) with its one-line `ConfigError`."""
    from app.keyfetch import KeyFetcher  # the providers import this module
    from app.providers import verifier_for
    from app.providers.secret_strength import check_secret_strength

    fetcher = KeyFetcher.from_settings(settings)
    for source in settings.sources.values():
        # Once built, `keys` are the decoded keys the scheme signs with.
        check_secret_strength(source, verifier_for(source, fetcher).keys)


def _check_secrets(settings: Settings) -> None:
    for variable, secret in (
        ("WEBHOOK_SIGNING_SECRET", settings.webhook_signing_secret),
        ("WEBHOOK_REPLAY_TOKEN", settings.webhook_replay_token),
        ("RQ_DASHBOARD_PASSWORD", settings.rq_dashboard_password),
        ("STRIPE_API_KEY", settings.stripe_api_key),
        ("GITHUB_TOKEN", settings.github_token),
        ("REDIS_SENTINEL_PASSWORD", settings.redis_sentinel_password),
    ):
        if secret is not None:
            check_not_placeholder(variable, secret.get_secret_value())
    token = settings.webhook_replay_token
    if token is not None and len(token.get_secret_value()) < MIN_REPLAY_TOKEN_LENGTH:
        raise ConfigError(
            f"WEBHOOK_REPLAY_TOKEN must be at least {MIN_REPLAY_TOKEN_LENGTH} characters "
            "(it lets its holder enqueue unsigned events); leave it empty to disable replay"
        )
