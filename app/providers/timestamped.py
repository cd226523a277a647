"""The schemes that sign a unix timestamp with the raw body: Stripe, Paddle, Slack and
Standard Webhooks. Each is a recipe (`recipe_spec.py`), which its verifier runs and from
which `webhooks send` signs (`workers/signing/recipe_signing.py`); this is the verifier
that runs them as those providers' own libraries read a request, stricter than a plain
recipe on two points: the timestamp is unix seconds, 1 to 12 digits, signed as the integer
they are (`017…` as `17…`), and the body is a JSON object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.providers.base import parse_timestamp
from app.providers.json_body import parse_json_object
from app.providers.recipe import RecipeVerifier


class TimestampedVerifier(RecipeVerifier):
    def _signed_stamp(self, headers: Mapping[str, str], pairs: Mapping[str, str]) -> str:
        return str(parse_timestamp(super()._signed_stamp(headers, pairs)))

    def _payload(self, body: bytes) -> Any:
        return parse_json_object(body)
