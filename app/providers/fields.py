"""Helpers of the providers added after the first seven: reading payloads (JSON values,
forms, JSON paths), timestamps, and the fallback event id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime
from urllib.parse import parse_qsl

from app.errors import InvalidPayload, InvalidSignature

# A batch whose items have different types is dispatched under this type.
MIXED = "batch"


def parse_form(body: bytes) -> list[tuple[str, str]]:
    """An application/x-www-form-urlencoded body as (name, value) pairs, in order."""
    try:
        text = body.decode("utf-8")
        return parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text))
    except (UnicodeDecodeError, ValueError):
        raise InvalidPayload("body is not a valid form") from None


def single_fields(body: bytes, names: Collection[str]) -> dict[str, str]:
    """The form's fields, refusing a body that repeats any of `names`. Where the signature,
    or what it signs, is a form field, the verifier would read one of the values and the
    handler, which gets a repeated field as a list, all of them."""
    pairs = parse_form(body)
    named = [name for name, _ in pairs if name in names]
    if len(named) != len(set(named)):
        raise InvalidPayload("the form repeats a signed field")
    return dict(pairs)


def json_path(payload: object, path: str) -> object:
    """`a.b.0.c` into nested objects and arrays; None when any step is missing."""
    value = payload
    for step in path.split("."):
        if isinstance(value, dict):
            value = value.get(step)
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return None
    return value


def body_digest(body: bytes) -> str:
    """The event id of a provider that sends none: the same bytes, the same id."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def common_type(types: Iterable[object]) -> str:
    """The type shared by every item of a batch, else `batch`."""
    found = {t for t in types if isinstance(t, str) and t}
    return found.pop() if len(found) == 1 else MIXED


def parse_iso8601(value: str) -> float:
    """RFC 3339 / ISO 8601 (Zendesk, Twitch with nanoseconds, SNS) as unix seconds."""
    text = value.strip()
    if not text or len(text) > 40 or not text[0].isdigit():
        raise InvalidSignature("malformed timestamp")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidSignature("malformed timestamp") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def first_header(headers: Mapping[str, str], names: Iterable[str]) -> str:
    for name in names:
        value = headers.get(name, "").strip()
        if value:
            return value
    return ""
