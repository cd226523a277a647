"""Provider verifiers: one module per signing scheme, all behind `Verifier`."""

from __future__ import annotations

from app.keyfetch import KeyFetcher
from app.providers.adyen import AdyenVerifier
from app.providers.base import Delivery, Verifier
from app.providers.braintree import BraintreeVerifier
from app.providers.discord import DiscordVerifier
from app.providers.dropbox import DropboxVerifier
from app.providers.generic import HmacVerifier
from app.providers.github import GitHubVerifier
from app.providers.gitlab import GitLabVerifier
from app.providers.hubspot import HubSpotVerifier
from app.providers.mailgun import MailgunVerifier
from app.providers.meta import MetaVerifier
from app.providers.paddle import PaddleVerifier
from app.providers.plaid import PlaidVerifier
from app.providers.presets import PRESET_VERIFIERS
from app.providers.recipe import RecipeVerifier
from app.providers.request import Inbound, Reply
from app.providers.sendgrid import SendGridVerifier
from app.providers.shopify import ShopifyVerifier
from app.providers.slack import SlackVerifier
from app.providers.sns import SnsVerifier
from app.providers.standard import StandardVerifier
from app.providers.stripe import StripeVerifier
from app.providers.twilio import TwilioVerifier
from app.providers.twitch import TwitchVerifier
from app.providers.woocommerce import WooCommerceVerifier
from app.providers.xero import XeroVerifier
from app.providers.zoom import ZoomVerifier
from app.sources import SourceConfig

# Verifiers that fetch keys take the shared `KeyFetcher` as well.
FETCHING: dict[str, type[SnsVerifier | PlaidVerifier]] = {
    cls.provider: cls for cls in (SnsVerifier, PlaidVerifier)
}
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
        RecipeVerifier,
        TwilioVerifier,
        GitLabVerifier,
        MetaVerifier,
        ZoomVerifier,
        TwitchVerifier,
        HubSpotVerifier,
        MailgunVerifier,
        WooCommerceVerifier,
        DropboxVerifier,
        XeroVerifier,
        AdyenVerifier,
        BraintreeVerifier,
        DiscordVerifier,
        SendGridVerifier,
        *PRESET_VERIFIERS,
        *FETCHING.values(),
    )
}


# The provider names WEBHOOK_SOURCES accepts: those of the verifiers, and only those.
PROVIDERS = tuple(sorted(VERIFIERS))


def verifier_for(source: SourceConfig, fetcher: KeyFetcher) -> Verifier:
    # `resolve_sources` only lets through names of PROVIDERS.
    fetching = FETCHING.get(source.provider)
    if fetching is not None:
        return fetching(source, fetcher)
    return VERIFIERS[source.provider](source)


__all__ = ["PROVIDERS", "VERIFIERS", "Delivery", "Inbound", "Reply", "Verifier", "verifier_for"]
