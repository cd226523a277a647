"""A request signed from a `Recipe` (`app/providers/recipe_spec.py`), read as its verifier
reads it: the signer of `recipe` sources and of the presets (`recipes.py`), and of the
providers whose verifier is built on a recipe of its own (Stripe, Slack, Paddle, Standard
Webhooks). What differs between them is the envelope (`Envelope`: the sample body and the
delivery headers); where the values go and what is signed is the recipe's.

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

A value sent in a header or a pair is sent as the receiver reads it, without outer spaces
(`base.header_value`), and signed as sent.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

from app.errors import InvalidPayload
from app.jobstate import PayloadFormat
from app.providers.base import event_id_from
from app.providers.fields import body_digest, json_path
from app.providers.recipe import decode_secret
from app.providers.recipe_spec import (
    Encoding,
    Locator,
    Origin,
    Recipe,
    SecretEncoding,
    Unit,
    template_parts,
)
from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    SigningError,
    header_value,
    hmac_digest,
    require_secret,
)
from workers.signing.envelope import Envelope, dumps, iso, set_header

CONTENT_TYPES = {
    PayloadFormat.JSON: "application/json",
    PayloadFormat.FORM: "application/x-www-form-urlencoded",
}
# What a secret is, in each encoding: for the one line that says it is not.
SECRET_FORMS = {
    SecretEncoding.RAW: "text",
    SecretEncoding.BASE64: "base64",
    SecretEncoding.WHSEC: "whsec_ followed by base64",
    SecretEncoding.HEX: "hex",
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
    handshake: bool = False,
) -> SignedRequest:
    """The envelope, with the id, type and timestamp placed where `recipe` reads them, signed;
    the id not where the body holds its own already (`id_in_body`). A `handshake` (Slack's
    URL check) carries no event: only its timestamp is placed, and no id is answered (the
    receiver answers it and queues nothing)."""
    require_secret(keys, source)
    key = decode_secret(keys.secret, recipe.secret_encoding)
    if key is None:
        raise SigningError(f"{name}: the secret is not {SECRET_FORMS[recipe.secret_encoding]}")
    form = recipe.payload == PayloadFormat.FORM
    body = copy.deepcopy(envelope.body)
    headers = {"Content-Type": CONTENT_TYPES[recipe.payload], **envelope.headers}
    pairs: dict[str, str] = {}
    values = {"url": event.url, "method": "POST"}

    def place(locator: Locator, value: Any, what: str) -> str:
        """Put `value` where `locator` reads it; returns it as sent."""
        if locator.origin == Origin.HEADER:
            value = header_value(str(value), name, what)
            set_header(headers, locator.name, value)
        elif locator.origin == Origin.SIGNATURE:
            value = pairs[locator.name] = header_value(str(value), name, what)
        elif locator.origin == Origin.JSON:
            set_path(body, locator.name, value, name, form)
        return str(value)

    if recipe.timestamp is not None:
        values["timestamp"] = stamp_text(recipe, event.timestamp)
        in_body = recipe.timestamp.origin == Origin.JSON and recipe.timestamp_unit != Unit.ISO8601
        number = int(values["timestamp"]) if in_body else values["timestamp"]
        place(recipe.timestamp, number, "the timestamp")
    if not handshake:
        values["id"] = event.event_id
        if not id_in_body:
            values["id"] = place(recipe.id[0], event.event_id, "the event id")
        for locator in recipe.type:
            place(locator, event.event_type, "the type")
    if form:
        if not isinstance(body, dict) or not all(isinstance(v, str) for v in body.values()):
            raise SigningError(f"{name}: a form body is an object of text fields")
        raw = urlencode(list(body.items())).encode()
    elif isinstance(body, dict | list):
        raw = dumps(body, name, envelope.indent)
    else:
        raise SigningError(f"{name}: a JSON body is an object or an array")
    signature = signature_value(recipe, key, signed_message(recipe, raw, values))
    if recipe.signature_key:
        items = [*pairs.items(), (recipe.signature_key, signature)]
        signature = recipe.signature_separator.join(f"{k}={v}" for k, v in items)
    set_header(headers, recipe.signature_header, signature)
    answered = "" if handshake else answered_id(recipe, name, headers, pairs, raw)
    return SignedRequest(event.url, headers, raw, answered)
