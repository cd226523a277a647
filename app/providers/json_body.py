"""Provider bodies parsed as JSON, strictly: what Python's parser adds to JSON (`NaN`,
`Infinity`, and numbers such as `1e400` that overflow to infinity) is refused, because a
non-finite timestamp compares false with every bound and would pass a window check.
"""

from __future__ import annotations

import json
import math
from typing import Any

from app.errors import InvalidPayload


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:20]} overflows a float")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("an object repeats a key")
    return found


def strict_json(text: bytes | bytearray | str, *, unique_keys: bool = False) -> Any:
    """`json.loads` without what Python adds to JSON: `NaN` and `Infinity` are refused, and so
    is a number such as `1e400` that parses to infinity (a non-finite timestamp compares false
    with every bound). With `unique_keys`, an object that repeats a key is refused too: where
    the signature is inside the body, the verifier reads the last value (Python's rule) and
    a handler's first-wins parser would read another. Raises ValueError (or RecursionError
    for absurd nesting)."""
    # As json.loads reads its argument: bytes are UTF-8 unless a BOM or the zero bytes say
    # UTF-16 or 32; a str that opens with a BOM is refused.
    if isinstance(text, str):
        if text.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    elif isinstance(text, bytes | bytearray):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    else:
        kind = type(text).__name__
        raise TypeError(f"the JSON object must be str, bytes or bytearray, not {kind}")
    return (_UNIQUE if unique_keys else _STRICT).decode(text)


# Made once: json.loads with any option builds a decoder per call.
_STRICT = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)
_UNIQUE = json.JSONDecoder(
    parse_constant=_not_json, parse_float=_finite, object_pairs_hook=_unique_keys
)


def parse_json_object(body: bytes, *, unique_keys: bool = False) -> dict[str, Any]:
    """The body as a JSON object, parsed strictly (see `strict_json`)."""
    try:
        payload = strict_json(body, unique_keys=unique_keys)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidPayload("body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise InvalidPayload("body must be a JSON object")
    return payload


def parse_json_value(body: bytes, *, unique_keys: bool = False) -> Any:
    """The body as a JSON object or array, parsed strictly (no NaN or Infinity)."""
    try:
        payload = strict_json(body, unique_keys=unique_keys)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidPayload("body is not valid JSON") from None
    if not isinstance(payload, dict | list):
        raise InvalidPayload("body must be a JSON object or array")
    return payload
