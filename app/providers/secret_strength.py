"""The least a signing secret may hold, checked once each verifier has decoded its keys.

A one-character secret is guessed in a few hundred HMACs, so a short secret stops startup
like a missing one. The length is the key's own: bytes after decoding for the schemes whose
secrets are hex or base64 (Adyen, Standard Webhooks, recipes with `secret_encoding`), the
UTF-8 bytes as shown for the others. Where a provider's own secrets can be shorter than the
general minimum, its own minimum applies, so that no secret the provider issues is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.sources import LEGACY_SOURCE, ConfigError, SourceConfig

MIN_SECRET_BYTES = 16
# The providers' own lower bounds: Twitch takes a secret of 10 to 100 characters, Lemon
# Squeezy one of 6 to 40 that the user chooses, and a Dropbox app secret is 15 characters.
PROVIDER_MINIMUM = {"twitch": 10, "lemonsqueezy": 6, "dropbox": 15}
# Public keys, not secrets: their parsers accept only the key's exact form and length.
PUBLIC_KEYS = frozenset({"discord", "sendgrid"})


def minimum_for(provider: str) -> int:
    return PROVIDER_MINIMUM.get(provider, MIN_SECRET_BYTES)


def check_secret_strength(source: SourceConfig, keys: Sequence[bytes]) -> None:
    """Raise a one-line `ConfigError` naming the variable when a key is too short; the
    message gives lengths, never the secret."""
    if source.provider in PUBLIC_KEYS or not keys:
        return
    minimum = minimum_for(source.provider)
    short = [len(key) for key in keys if len(key) < minimum]
    if not short:
        return
    variable = source.variable_name("WEBHOOK_SECRET_")
    if source.name == LEGACY_SOURCE:
        variable += " (or WEBHOOK_SIGNING_SECRET)"
    which = "a secret" if len(keys) == 1 else f"{len(short)} of its {len(keys)} secrets"
    hint = ""
    if len(keys) > 1:
        hint = (
            f"; it is split on commas, so a secret that holds one is written as a JSON list: "
            f'{variable}=\'["first,secret", "second"]\''
        )
    raise ConfigError(
        f"{variable}: {which} {'is' if len(short) == 1 else 'are'} shorter than the "
        f"{minimum} bytes a {source.provider} secret needs (got {', '.join(map(str, short))})"
        f"{hint}"
    )
