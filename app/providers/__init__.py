"""Provider verifiers: one module per signing scheme, all behind `Verifier`."""

from __future__ import annotations

from app.providers.base import Delivery, Verifier
from app.providers.generic import HmacVerifier
from app.providers.github import GitHubVerifier
from app.providers.paddle import PaddleVerifier
from app.providers.shopify import ShopifyVerifier
from app.providers.slack import SlackVerifier
from app.providers.standard import StandardVerifier
from app.providers.stripe import StripeVerifier
from app.settings import SourceConfig

VERIFIERS: dict[str, type[Verifier]] = {
    cls.provider: cls
    for cls in (
        HmacVerifier,
        StripeVerifier,
        GitHubVerifier,
        ShopifyVerifier,
        SlackVerifier,
        PaddleVerifier,
        StandardVerifier,
    )
}


def verifier_for(source: SourceConfig) -> Verifier:
    # Settings only accept names of PROVIDERS, which a test keeps equal to VERIFIERS.
    return VERIFIERS[source.provider](source)


__all__ = ["VERIFIERS", "Delivery", "Verifier", "verifier_for"]
