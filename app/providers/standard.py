"""Standard Webhooks (Svix and others): `webhook-id`, `webhook-timestamp`, `webhook-signature`.

Svix sends the same headers as `svix-id`, `svix-timestamp`, `svix-signature`. The signed
string is `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256 in base64; the header holds
space-separated `v1,<base64>` signatures, any one of which may match. The secret is
`whsec_<base64>`: the prefix is stripped and the rest base64-decoded. The timestamp must be
within the tolerance both ways. The event id is `webhook-id`; the type the body's `type`.

The scheme is a recipe (`standard_webhooks`), which the `resend` and `clerk` presets use
under Svix's names. A `standard` source takes either family of headers, and checks as the
reference libraries do: the timestamp is an integer (signed as one) and the body a JSON
object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from app.errors import InvalidSignature
from app.providers.base import Delivery, Verifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound
from app.providers.timestamped import TimestampedVerifier
from app.sources import ConfigError, SourceConfig

PREFIX = "whsec_"
PARTS = ("id", "timestamp", "signature")
# Tried in this order: the first family whose three headers are all there is checked.
FAMILIES = ("webhook", "svix")


def standard_webhooks(family: str) -> dict[str, Any]:
    """The recipe of Standard Webhooks with its headers named `<family>-id`, ..."""
    return {
        "signature_header": f"{family}-signature",
        "signature_separator": " ",
        "signature_prefix": "v1,",
        "encoding": "base64",
        "signed": "{id}.{timestamp}.{body}",
        "timestamp": f"header:{family}-timestamp",
        "secret_encoding": "whsec",
        "id": f"header:{family}-id",
        "type": "json:type",
        "headers": [f"{family}-id", f"{family}-timestamp"],
    }


RECIPES = {family: Recipe.model_validate(standard_webhooks(family)) for family in FAMILIES}


class StandardFamily(TimestampedVerifier):
    """One family's recipe, read as the reference libraries read it."""

    provider = "standard"


def _family(headers: Mapping[str, str]) -> tuple[str, str, str]:
    """The family the request uses, with its id and timestamp."""
    for family in FAMILIES:
        values = [headers.get(f"{family}-{part}", "").strip() for part in PARTS]
        if all(values):
            return family, values[0], values[1]
    raise InvalidSignature("missing webhook-id, webhook-timestamp or webhook-signature header")


class StandardVerifier(Verifier):
    provider = "standard"

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        try:
            self.families = {family: StandardFamily(source, RECIPES[family]) for family in FAMILIES}
        except ConfigError:
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_SECRET_')}: a Standard Webhooks secret is "
                f"'{PREFIX}' followed by base64"
            ) from None
        self.keys = self.families[FAMILIES[0]].keys

    def check(self, request: Inbound) -> Delivery:
        family, message_id, stamp = _family(request.headers)
        delivery = self.families[family].check(request)
        # Handed on under the standard's names, whichever family came.
        return replace(delivery, headers={"webhook-id": message_id, "webhook-timestamp": stamp})
