"""`recipe`: the verifier that runs a `Recipe`, and the base of the presets.

Order of the checks, as for every provider: the signature over the exact bytes (and the
timestamp, id, URL and method the recipe signs), then the signed timestamp's window, then
the body is parsed, then a timestamp inside the body (Linear) is checked, then the event
id and type are read. Presets with a handshake override `handshake_reply`, which runs only
on verified requests.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from app.errors import InvalidPayload, InvalidSignature, StaleTimestamp
from app.jobstate import PayloadFormat
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    event_id_from,
    event_type_from,
    key_value_pairs,
    parse_hex,
    pick_headers,
)
from app.providers.fields import body_digest, json_path, parse_form, parse_iso8601
from app.providers.json_body import parse_json_value
from app.providers.recipe_spec import (
    Encoding,
    Locator,
    Origin,
    Recipe,
    SecretEncoding,
    Unit,
    load_recipe,
    template_parts,
)
from app.providers.request import Inbound, Reply
from app.providers.signatures import DIGESTS, decode_signatures, matching_key
from app.sources import ConfigError, SourceConfig

MAX_TIMESTAMP_LENGTH = 40


def decode_secret(text: str, encoding: SecretEncoding) -> bytes | None:
    if encoding == SecretEncoding.RAW:
        return text.encode()
    if encoding == SecretEncoding.HEX:
        return parse_hex(text) or None
    body = text.removeprefix("whsec_") if encoding == SecretEncoding.WHSEC else text
    try:
        # Svix's own library pads: some secrets are shown without their `=`.
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True) or None
    except (binascii.Error, ValueError):
        return None


# Where an event id is as signed as the body: in it, its digest, or a constant.
BODY_ORIGINS = (Origin.JSON, Origin.DIGEST, Origin.CONST)


def id_covered(recipe: Recipe, parts: Sequence[tuple[bytes, str | None]]) -> bool:
    """Whether the signature covers every place the event id may come from.

    With `{id}` in the signed string it does: the first id locator is signed and must be
    present, so the later ones are never reached. Without it, only ids read from the body
    (which is always signed) are; a header or a pair of the signature header is not, even
    as a fallback, since a sender can add it to a captured request that lacked it.
    """
    if any(name == "id" for _, name in parts):
        return True
    return all(locator.origin in BODY_ORIGINS for locator in recipe.id)


class RecipeVerifier(Verifier):
    provider = "recipe"
    # Presets set their recipe here; a `recipe` source reads WEBHOOK_RECIPE_<NAME>; a
    # verifier built on several recipes (`standard`, one per header family) passes each.
    preset: ClassVar[Recipe | None] = None

    def __init__(self, source: SourceConfig, recipe: Recipe | None = None) -> None:
        super().__init__(source)
        if recipe is None:
            recipe = self.preset if self.preset is not None else load_recipe(source)
        self.recipe = recipe
        self.signature_header = recipe.signature_header.lower()
        self.parts = template_parts(recipe.signed)
        self.signs_url = any(name == "url" for _, name in self.parts)
        self.id_signed = id_covered(recipe, self.parts)
        self.tolerance = source.window(recipe.tolerance)
        self.digest_size = DIGESTS[recipe.algorithm]().digest_size
        keys = [decode_secret(s.get_secret_value(), recipe.secret_encoding) for s in source.secrets]
        if not all(keys):
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_SECRET_')}: not a valid "
                f"{recipe.secret_encoding.value} secret"
            )
        self.keys = tuple(key for key in keys if key)

    def check(self, request: Inbound) -> Delivery:
        recipe = self.recipe
        header_value = request.headers.get(self.signature_header, "").strip()
        if not header_value:
            raise InvalidSignature(f"missing {recipe.signature_header} header")
        signatures, pairs = self._signatures(header_value)
        stamp = self._signed_stamp(request.headers, pairs)
        message = self._message(request, stamp, pairs)
        key = matching_key(recipe.algorithm, self.keys, message, signatures)
        if stamp:
            self._check_window(self._seconds(stamp), request.now)
        payload = self._payload(request.body)
        if recipe.timestamp is not None and recipe.timestamp.origin == Origin.JSON:
            self._check_window(self._body_seconds(payload), request.now)
        reply = self.handshake_reply(request, payload, key)
        if reply is not None:
            return Delivery(event_id="", event_type=self.event_type(request, payload), reply=reply)
        return Delivery(
            event_id=self.event_id(request, payload),
            event_type=self.event_type(request, payload),
            headers=pick_headers(request.headers, recipe.headers),
            payload_format=recipe.payload,
        )

    def handshake_reply(self, request: Inbound, payload: Any, key: bytes) -> Reply | None:
        """The answer to a verified handshake (Zoom, Twitch, Xero), else None."""
        return None

    def event_id(self, request: Inbound, payload: Any) -> str:
        for locator in self.recipe.id:
            value = self._value(locator, request, payload)
            if value not in (None, ""):
                return event_id_from(value, f"{locator.origin.value} {locator.name}".strip())
        raise InvalidPayload("no event id: " + ", ".join(str(loc) for loc in self.recipe.id))

    def event_type(self, request: Inbound, payload: Any) -> str:
        for locator in self.recipe.type:
            value = event_type_from(self._value(locator, request, payload))
            if value:
                return value
        return ""

    def _value(self, locator: Locator, request: Inbound, payload: Any) -> object:
        if locator.origin == Origin.HEADER:
            return request.headers.get(locator.name, "").strip()
        if locator.origin == Origin.JSON:
            return json_path(payload, locator.name)
        if locator.origin == Origin.DIGEST:
            return body_digest(request.body)
        if locator.origin == Origin.SIGNATURE:
            header_value = request.headers.get(self.signature_header, "")
            pairs = key_value_pairs(header_value, self.recipe.signature_separator)
            return dict(pairs).get(locator.name, "").strip()
        return locator.name  # const

    def _signatures(self, value: str) -> tuple[list[bytes], dict[str, str]]:
        recipe = self.recipe
        pairs: dict[str, str] = {}
        if recipe.signature_key:
            found = key_value_pairs(value, recipe.signature_separator)
            items = [v for k, v in found if k == recipe.signature_key]
            for k, v in found:
                if k in pairs and k != recipe.signature_key:
                    raise InvalidSignature(f"{recipe.signature_header} repeats {k}=")
                pairs[k] = v
        elif recipe.signature_separator:
            separator = recipe.signature_separator.strip() or None  # " ": any whitespace
            items = [item.strip() for item in value.split(separator)]
        else:
            items = [value]
        decode = parse_hex if recipe.encoding == Encoding.HEX else b64decode
        signatures = decode_signatures(items, recipe.signature_prefix, decode, self.digest_size)
        if not signatures:
            raise InvalidSignature(f"{recipe.signature_header} has no well-formed signature")
        return signatures, pairs

    def _signed_stamp(self, headers: Mapping[str, str], pairs: Mapping[str, str]) -> str:
        locator = self.recipe.timestamp
        if locator is None or locator.origin == Origin.JSON:
            return ""
        if locator.origin == Origin.HEADER:
            stamp = headers.get(locator.name, "").strip()
        else:
            stamp = pairs.get(locator.name, "").strip()
        if not stamp or len(stamp) > MAX_TIMESTAMP_LENGTH:
            raise InvalidSignature(f"missing or malformed timestamp ({locator})")
        return stamp

    def _message(self, request: Inbound, stamp: str, pairs: Mapping[str, str]) -> bytes:
        values = {
            "body": request.body,
            "timestamp": stamp.encode(),
            "url": request.url.encode(),
            "method": request.method.encode(),
        }
        out = bytearray()
        for literal, name in self.parts:
            out += literal
            if name == "id":
                out += self._signed_id(request.headers, pairs)
            elif name is not None:
                out += values[name]
        return bytes(out)

    def _signed_id(self, headers: Mapping[str, str], pairs: Mapping[str, str]) -> bytes:
        locator = self.recipe.id[0]
        found = headers if locator.origin == Origin.HEADER else pairs
        value = found.get(locator.name, "").strip()
        if not value:
            raise InvalidSignature(f"missing signed id ({locator})")
        return value.encode()

    def _seconds(self, stamp: str) -> float:
        unit = self.recipe.timestamp_unit
        if unit == Unit.ISO8601:
            return parse_iso8601(stamp)
        if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 16:
            raise InvalidSignature("malformed signature timestamp")
        return int(stamp) / 1000 if unit == Unit.MILLISECONDS else float(stamp)

    def _body_seconds(self, payload: Any) -> float:
        assert self.recipe.timestamp is not None
        value = json_path(payload, self.recipe.timestamp.name)
        if self.recipe.timestamp_unit == Unit.ISO8601 and isinstance(value, str):
            return parse_iso8601(value)
        if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > 1e16:
            raise InvalidPayload(f"no timestamp in the body ({self.recipe.timestamp})")
        return value / 1000 if self.recipe.timestamp_unit == Unit.MILLISECONDS else float(value)

    def _check_window(self, seconds: float, now: float) -> None:
        if seconds < now - self.tolerance or (
            self.recipe.future_refused and seconds > now + self.tolerance
        ):
            raise StaleTimestamp("timestamp outside the replay tolerance")

    def _payload(self, body: bytes) -> Any:
        if self.recipe.payload == PayloadFormat.FORM:
            return dict(parse_form(body))
        return parse_json_value(body)
