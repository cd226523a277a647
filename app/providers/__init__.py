"""Provider verifiers: one module per signing scheme, all behind `Verifier`."""

from __future__ import annotations

from app.providers.base import Delivery, Verifier
from app.providers.generic import HmacVerifier
from app.settings import ConfigError, SourceConfig

VERIFIERS: dict[str, type[Verifier]] = {
    HmacVerifier.provider: HmacVerifier,
}


def verifier_for(source: SourceConfig) -> Verifier:
    try:
        cls = VERIFIERS[source.provider]
    except KeyError:
        raise ConfigError(
            f"provider {source.provider!r} of source {source.name!r} is not available "
            f"in this version; available: {', '.join(sorted(VERIFIERS))}"
        ) from None
    return cls(source)


__all__ = ["VERIFIERS", "Delivery", "Verifier", "verifier_for"]
