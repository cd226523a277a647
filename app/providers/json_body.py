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


def strict_json(text: bytes | str) -> Any:
    """`json.loads` without what Python adds to JSON: `NaN` and `Infinity` are refused, and so
    is a number such as `1e400` that parses to infinity (a non-finite timestamp compares false
    with every bound). Raises ValueError (or RecursionError for absurd nesting)."""
    return json.loads(text, parse_constant=_not_json, parse_float=_finite)


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, parsed strictly (see `strict_json`)."""
    try:
        payload = strict_json(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidPayload("body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise InvalidPayload("body must be a JSON object")
    return payload


def parse_json_value(body: bytes) -> Any:
    """The body as a JSON object or array, parsed strictly (no NaN or Infinity)."""
    try:
        payload = strict_json(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidPayload("body is not valid JSON") from None
    if not isinstance(payload, dict | list):
        raise InvalidPayload("body must be a JSON object or array")
    return payload
