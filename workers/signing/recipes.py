"""Signers of every recipe: one generic signer that reads a `Recipe`
(`app/providers/recipe_spec.py`) as its verifier does, for `recipe` sources (the scheme in
`WEBHOOK_RECIPE_<NAME>`) and for each preset of `app/providers/presets.py`, whose
envelope (sample body, delivery headers, what `data` replaces) is in `recipe_samples.py`.

Where the signer puts each value the recipe reads:
- the timestamp (`event.timestamp`), in its `timestamp_unit`: `header:NAME` in that header,
  `signature:KEY` as a `KEY=` pair of the signature header, `json:PATH` at that path of the
  body (a number for `s` and `ms`, text for `iso8601`);
- the event id, at the first `id` locator: a header, a pair, or a body path; for `digest`,
  the id answered is `sha256:` + the hex SHA-256 of the body;
- the type, at every `header:` and `json:` locator of `type` (`const:` is the recipe's);
- the signed string: `signed` with `{body}`, `{timestamp}` and `{id}` as sent, `{url}` as
  `event.url` and `{method}` as `POST`; then `signature_prefix` + the HMAC (`encoding`),
  with the secret decoded per `secret_encoding`.

For a `recipe` source, `data` is the whole body: a JSON value (an object wherever a
`json:` locator must be written into it) or, for `"payload": "form"`, an object of
strings; the type and timestamp are set over it where the recipe reads them, and the id
unless the data has its own at the recipe's `json:` id locator: that one stays as given and
is the event id, which an id given must equal (`base.own_id`). Without
`data` the body is a JSON object (or form) holding just those, and the id, when the
recipe reads it from elsewhere, at the first `json:` id locator or else at `id`, so two
events are two bodies.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

from app.errors import InvalidPayload
from app.jobstate import PayloadFormat
from app.providers.base import event_id_from
from app.providers.fields import body_digest, json_path
from app.providers.presets import PRESETS
from app.providers.recipe import decode_secret
from app.providers.recipe_spec import (
    Encoding,
    Locator,
    Origin,
    Recipe,
    Unit,
    load_recipe,
    template_parts,
)
from app.settings import ConfigError, SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    SigningError,
    hmac_digest,
    own_id,
    require_secret,
)
from workers.signing.envelope import Envelope, dumps, header_value, iso, set_header
from workers.signing.recipe_samples import SAMPLES

CONTENT_TYPES = {
    PayloadFormat.JSON: "application/json",
    PayloadFormat.FORM: "application/x-www-form-urlencoded",
}


def stamp_text(recipe: Recipe, ts: int) -> str:
    if recipe.timestamp_unit == Unit.ISO8601:
        return iso(ts)
    return str(ts * 1000 if recipe.timestamp_unit == Unit.MILLISECONDS else ts)


def set_path(body: Any, path: str, value: Any, name: str, form: bool) -> None:
    """Write `value` where `json_path(body, path)` reads it, making the objects on the way."""
    if form:
        if not isinstance(body, dict) or "." in path or not isinstance(value, str):
            raise SigningError(f"{name}: a form holds flat text fields, not json:{path}")
        body[path] = value
        return
    steps = path.split(".")
    node = body
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if isinstance(node, dict):
            if last:
                node[step] = value
            elif node.get(step) is None:
                node[step] = {}
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            if last:
                node[int(step)] = value
            node = node[int(step)]
        else:
            raise SigningError(f"{name}: the body has no object to hold json:{path}")


def signature_value(recipe: Recipe, key: bytes, message: bytes) -> str:
    digest = hmac_digest(key, message, recipe.algorithm.value)
    text = digest.hex() if recipe.encoding == Encoding.HEX else base64.b64encode(digest).decode()
    return recipe.signature_prefix + text


def signed_message(recipe: Recipe, body: bytes, values: Mapping[str, str]) -> bytes:
    out = bytearray()
    for literal, placeholder in template_parts(recipe.signed):
        out += literal
        if placeholder == "body":
            out += body
        elif placeholder is not None:
            out += values[placeholder].encode()
    return bytes(out)


def answered_id(
    recipe: Recipe, name: str, headers: dict[str, str], pairs: dict[str, str], body: bytes
) -> str:
    """The id the verifier reads: the first of the recipe's `id` locators present."""
    lowered = {k.lower(): v.strip() for k, v in headers.items()}
    parsed: Any = None
    if any(loc.origin == Origin.JSON for loc in recipe.id):
        text = body.decode()
        form = recipe.payload == PayloadFormat.FORM
        parsed = dict(parse_qsl(text, keep_blank_values=True)) if form else json.loads(text)
    for locator in recipe.id:
        value: object = body_digest(body)
        if locator.origin == Origin.HEADER:
            value = lowered.get(locator.name, "")
        elif locator.origin == Origin.SIGNATURE:
            value = pairs.get(locator.name, "")
        elif locator.origin == Origin.JSON:
            value = json_path(parsed, locator.name)
        if value not in (None, ""):
            try:
                return event_id_from(value, str(locator))
            except InvalidPayload as exc:
                raise SigningError(f"{name}: {exc}") from None
    raise SigningError(f"{name}: the request holds no event id where the recipe reads it")


def sign_with_recipe(
    recipe: Recipe,
    name: str,
    source: SourceConfig,
    event: EventToSign,
    keys: Keys,
    envelope: Envelope,
    *,
    id_in_body: bool = False,
) -> SignedRequest:
    """The envelope, with the id, type and timestamp placed where `recipe` reads them, signed;
    the id not where the body holds its own already (`id_in_body`)."""
    require_secret(keys, source)
    key = decode_secret(keys.secret, recipe.secret_encoding)
    if key is None:
        raise SigningError(f"{name}: the secret is not a valid {recipe.secret_encoding} secret")
    form = recipe.payload == PayloadFormat.FORM
    body = copy.deepcopy(envelope.body)
    headers = {"Content-Type": CONTENT_TYPES[recipe.payload], **envelope.headers}
    pairs: dict[str, str] = {}
    values = {"url": event.url, "method": "POST"}

    def place(locator: Locator, value: Any, what: str) -> None:
        if locator.origin == Origin.HEADER:
            set_header(headers, locator.name, header_value(str(value), name, what))
        elif locator.origin == Origin.SIGNATURE:
            pairs[locator.name] = header_value(str(value), name, what)
        elif locator.origin == Origin.JSON:
            set_path(body, locator.name, value, name, form)

    if recipe.timestamp is not None:
        values["timestamp"] = stamp_text(recipe, event.timestamp)
        in_body = recipe.timestamp.origin == Origin.JSON and recipe.timestamp_unit != Unit.ISO8601
        number = int(values["timestamp"]) if in_body else values["timestamp"]
        place(recipe.timestamp, number, "timestamp")
    values["id"] = event.event_id
    if not id_in_body:
        place(recipe.id[0], event.event_id, "event id")
    for locator in recipe.type:
        place(locator, event.event_type, "type")
    if form:
        if not isinstance(body, dict) or not all(isinstance(v, str) for v in body.values()):
            raise SigningError(f"{name}: a form body is an object of text fields")
        raw = urlencode(list(body.items())).encode()
    elif isinstance(body, dict | list):
        raw = dumps(body, name)
    else:
        raise SigningError(f"{name}: a JSON body is an object or an array")
    signature = signature_value(recipe, key, signed_message(recipe, raw, values))
    if recipe.signature_key:
        items = [*pairs.items(), (recipe.signature_key, signature)]
        signature = recipe.signature_separator.join(f"{k}={v}" for k, v in items)
    set_header(headers, recipe.signature_header, signature)
    return SignedRequest(event.url, headers, raw, answered_id(recipe, name, headers, pairs, raw))


def plain_envelope(recipe: Recipe, event: EventToSign) -> Envelope:
    """A `recipe` source's body: `data` as given, else the id where the recipe reads it
    or, if that is not the body, at its first `json:` id locator or `id`."""
    if event.data is not None:
        return Envelope(event.data)
    body: dict[str, Any] = {}
    if recipe.id[0].origin != Origin.JSON:
        paths = [loc.name for loc in recipe.id if loc.origin == Origin.JSON]
        form = recipe.payload == PayloadFormat.FORM
        set_path(body, paths[0] if paths else "id", event.event_id, "recipe", form)
    return Envelope(body)


def sign_recipe(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    try:
        recipe = load_recipe(source)
    except ConfigError as exc:
        raise SigningError(str(exc)) from None
    own = None
    first = recipe.id[0]
    if event.data is not None and first.origin == Origin.JSON:
        # `data` is the whole body: an id of its own where the recipe reads it stands.
        own = own_id(event, json_path(event.data, first.name), source.name, first.name)
    if own is not None:
        event = replace(event, event_id=own)
    envelope = plain_envelope(recipe, event)
    return sign_with_recipe(
        recipe, source.name, source, event, keys, envelope, id_in_body=own is not None
    )


def preset_signer(name: str) -> Signer:
    recipe, sample = PRESETS[name], SAMPLES[name]

    def sign(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
        return sign_with_recipe(recipe, name, source, event, keys, sample(event))

    sign.__name__ = sign.__qualname__ = f"sign_{name}"
    return sign


SIGNERS: dict[str, Signer] = {
    "recipe": sign_recipe,
    **{name: preset_signer(name) for name in PRESETS},
}
