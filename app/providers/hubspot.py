"""`hubspot` (signature v3): `X-HubSpot-Signature-v3: <base64>`.

The signed string is method + URI + raw body + `X-HubSpot-Request-Timestamp` (unix
milliseconds), HMAC-SHA256 with the app's client secret; the timestamp must be within the
tolerance both ways (HubSpot's SDK forgets the future side). The URI is the URL HubSpot
called, with only these escapes decoded, as HubSpot's docs list them:
`%3A : %2F / %3F ? %40 @ %21 ! %24 $ %27 ' %28 ( %29 ) %2A * %2C , %3B ;`.

The body is a batch (a JSON array of up to 100 events). Its id is the SHA-256 of the
events without their `attemptNumber`, which is the only thing a retry changes; its type is
the events' `subscriptionType` when they share one, else `batch`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from typing import Any

from app.errors import InvalidPayload
from app.providers.base import Delivery
from app.providers.fields import common_type
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound

DECODED = {
    "%3A": ":",
    "%2F": "/",
    "%3F": "?",
    "%40": "@",
    "%21": "!",
    "%24": "$",
    "%27": "'",
    "%28": "(",
    "%29": ")",
    "%2A": "*",
    "%2C": ",",
    "%3B": ";",
}
_ESCAPE = re.compile("|".join(DECODED), re.IGNORECASE)
RECIPE = Recipe.model_validate(
    {
        "signature_header": "X-HubSpot-Signature-v3",
        "encoding": "base64",
        "signed": "{method}{url}{body}{timestamp}",
        "timestamp": "header:X-HubSpot-Request-Timestamp",
        "timestamp_unit": "ms",
        "id": "digest",
    }
)


def hubspot_uri(url: str) -> str:
    return _ESCAPE.sub(lambda m: DECODED[m.group(0).upper()], url)


class HubSpotVerifier(RecipeVerifier):
    provider = "hubspot"
    preset = RECIPE

    def check(self, request: Inbound) -> Delivery:
        return super().check(replace(request, url=hubspot_uri(request.url)))

    def event_id(self, request: Inbound, payload: Any) -> str:
        events = _events(payload)
        stable = [{k: v for k, v in e.items() if k != "attemptNumber"} for e in events]
        canonical = json.dumps(stable, sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(canonical).hexdigest()

    def event_type(self, request: Inbound, payload: Any) -> str:
        return common_type(e.get("subscriptionType") for e in _events(payload))


def _events(payload: Any) -> list[dict[str, Any]]:
    if not isinstance(payload, list) or not all(isinstance(e, dict) for e in payload):
        raise InvalidPayload("a HubSpot body is a JSON array of events")
    return payload
