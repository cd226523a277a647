"""The declarative HMAC recipe: a provider's signing scheme described as data.

A `recipe` source reads it as JSON from `WEBHOOK_RECIPE_<NAME>`; the named presets
(`presets.py`) are the same `Recipe` values written in Python. A recipe that cannot work
(an unknown field, `{timestamp}` signed with no timestamp to sign...) stops startup with
a one-line message that names the field.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    model_validator,
)

from app.jobstate import PayloadFormat
from app.sources import ConfigError, SourceConfig

PLACEHOLDERS = ("body", "timestamp", "id", "url", "method")
_HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$"


class Algorithm(StrEnum):
    SHA1 = "sha1"
    SHA256 = "sha256"
    SHA512 = "sha512"


class Encoding(StrEnum):
    HEX = "hex"
    BASE64 = "base64"


class SecretEncoding(StrEnum):
    RAW = "raw"  # the UTF-8 bytes of the secret as shown
    BASE64 = "base64"
    WHSEC = "whsec"  # `whsec_<base64>`: prefix stripped, rest base64-decoded (Svix)
    HEX = "hex"


class Unit(StrEnum):
    SECONDS = "s"
    MILLISECONDS = "ms"
    ISO8601 = "iso8601"


class Origin(StrEnum):
    HEADER = "header"  # header:X-Event-Id
    SIGNATURE = "signature"  # signature:t, a field of the signature header
    JSON = "json"  # json:event.id, a path into the verified body
    DIGEST = "digest"  # the SHA-256 of the body (event ids only)
    CONST = "const"  # const:notification, a fixed value (event types only)


@dataclass(frozen=True, slots=True)
class Locator:
    """Where a value comes from, written `origin:name`."""

    origin: Origin
    name: str = ""

    @staticmethod
    def parse(value: object) -> object:
        if not isinstance(value, str):
            return value
        origin, _, name = value.partition(":")
        if origin not in set(Origin):
            raise ValueError(
                f"{value!r}: expected header:NAME, signature:KEY, json:PATH, digest or const:VALUE"
            )
        if (origin == Origin.DIGEST) == bool(name):
            raise ValueError(f"{value!r}: 'digest' takes no name, the others need one")
        return Locator(Origin(origin), name.strip().lower() if origin == "header" else name)

    def __str__(self) -> str:
        return f"{self.origin.value}:{self.name}" if self.name else self.origin.value


def _locators(value: object) -> object:
    items = [value] if isinstance(value, str) else value
    return tuple(Locator.parse(item) for item in items) if isinstance(items, list) else items


def _lower_names(value: object) -> object:
    return tuple(str(v).lower() for v in value) if isinstance(value, list | tuple) else value


Written = Annotated[Locator, PlainSerializer(str, return_type=str)]
One = Annotated[Written, BeforeValidator(Locator.parse)]
Several = Annotated[tuple[Written, ...], BeforeValidator(_locators)]


class Recipe(BaseModel):
    """One HMAC scheme. JSON field names are the attribute names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    signature_header: str = Field(pattern=_HEADER_NAME)
    # Stripped from each signature (`sha256=`, `v1=`, `v1,`); a signature without it is
    # ignored when the header holds several, refused when it holds one.
    signature_prefix: str = ""
    # Several signatures (or key=value pairs) in one header, separated by this.
    signature_separator: str = Field("", pattern=r"^(|,|;| |&)$")
    # The header is key=value pairs (`t=…,v1=…`): signatures are the values of this key.
    signature_key: str = ""
    algorithm: Algorithm = Algorithm.SHA256
    encoding: Encoding = Encoding.HEX
    # What is signed: text with {body}, {timestamp}, {id}, {url}, {method}.
    signed: str = "{body}"
    timestamp: One | None = None
    timestamp_unit: Unit = Unit.SECONDS
    # Seconds; REPLAY_TOLERANCE_<NAME> overrides it, and it overrides REPLAY_TOLERANCE.
    tolerance: int | None = Field(None, ge=1)
    # Refuse timestamps ahead of our clock by more than the tolerance, as well as old ones.
    future_refused: bool = True
    secret_encoding: SecretEncoding = SecretEncoding.RAW
    # The event id: the first of these that the request has.
    id: Several = Field(min_length=1)
    # The event type: likewise, else "".
    type: Several = ()
    payload: PayloadFormat = PayloadFormat.JSON
    # Headers handed to handlers in `event.headers`.
    headers: Annotated[tuple[str, ...], BeforeValidator(_lower_names)] = ()

    def to_json(self) -> str:
        """The recipe as WEBHOOK_RECIPE_<NAME> would hold it (defaults left out)."""
        return self.model_dump_json(exclude_defaults=True)

    @model_validator(mode="after")
    def _consistent(self) -> Recipe:
        fields = template_fields(self.signed)
        if fields.count("body") != 1:
            raise ValueError("'signed' must contain {body} exactly once")
        stamp = self.timestamp
        if stamp is not None and stamp.origin not in (
            Origin.HEADER,
            Origin.SIGNATURE,
            Origin.JSON,
        ):
            raise ValueError("'timestamp' comes from header:, signature: or json:")
        if "timestamp" in fields and (stamp is None or stamp.origin == Origin.JSON):
            raise ValueError("'signed' uses {timestamp}: 'timestamp' must be header: or signature:")
        for name in ("timestamp", "id"):
            values = getattr(self, name)
            values = values if isinstance(values, tuple) else (values,)
            if any(v is not None and v.origin == Origin.SIGNATURE for v in values) and not (
                self.signature_key
            ):
                raise ValueError(f"'{name}' signature:KEY needs 'signature_key' (key=value pairs)")
        if self.signature_key and not self.signature_separator:
            raise ValueError("'signature_key' needs 'signature_separator' between the pairs")
        if "id" in fields and self.id[0].origin not in (Origin.HEADER, Origin.SIGNATURE):
            raise ValueError("'signed' uses {id}: the first 'id' must be header: or signature:")
        if any(item.origin == Origin.CONST for item in self.id):
            raise ValueError("'id' cannot be const: (every event would be a duplicate)")
        if any(item.origin in (Origin.DIGEST, Origin.SIGNATURE) for item in self.type):
            raise ValueError("'type' comes from header:, json: or const:")
        if self.signature_header.lower() in self.headers:
            raise ValueError("'headers' must not hand on the signature header")
        # A timestamp outside the signed bytes is the sender's to change: a captured request
        # re-sent with a fresh one would pass the window, which then protects nothing.
        if stamp is not None and stamp.origin != Origin.JSON and "timestamp" not in fields:
            raise ValueError(
                f"'timestamp' {stamp} is not signed: put {{timestamp}} in 'signed' as the "
                "provider signs it, or use json:PATH for a timestamp inside the body"
            )
        return self


def template_fields(template: str) -> list[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        raise ValueError("'signed' has an unmatched { or }") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            raise ValueError(
                f"'signed' has {{{name}}}: use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            )
        names.append(name)
    return names


def template_parts(template: str) -> tuple[tuple[bytes, str | None], ...]:
    """The template as (literal bytes, placeholder or None) pairs, compiled once."""
    return tuple(
        (literal.encode(), name) for literal, name, _, _ in string.Formatter().parse(template)
    )


def load_recipe(source: SourceConfig) -> Recipe:
    variable = source.variable_name("WEBHOOK_RECIPE_")
    text = source.variable("WEBHOOK_RECIPE_")
    if not text:
        raise ConfigError(f"{variable} is not set: a recipe source needs its scheme (JSON)")
    try:
        return Recipe.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(f"{variable}: {describe(exc)}") from None


def describe(error: ValidationError) -> str:
    """One line naming each bad field; never the value given."""
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in item["loc"] if not isinstance(p, int))
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"field '{where}': {message}" if where else message)
    return "; ".join(parts)
