"""What the signers share to build an envelope: JSON as sent, the event's times as the
providers write them, and, for the URL-and-body and recipe signers, sample ids derived
from the event id. The checks on what goes in (`object_data`, `header_value`) are
`base.py`'s, one set for every signer.

Sample objects carry ids derived from the event id (`derived`), so two events are two
bodies even where the id itself travels in a header the signature does not cover (the
receiver then also claims the signed bytes). Where a provider's event id is the digest of
the body, the envelope has no clock in it (`SAMPLE_TIME` instead): the same event sent
twice is then the same bytes, a duplicate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from workers.signing.base import EventToSign, SigningError, event_object

# 2026-01-01T00:00:00Z: the time written in bodies whose event id is their digest.
SAMPLE_TIME = 1_767_225_600
# The fraction of the times written to the millisecond (of a whole second: the event's).
MILLIS = ".000"


def dumps(value: Any, provider: str, indent: int | None = None) -> bytes:
    """Compact JSON, UTF-8, as most providers send it; indented as Stripe's, with `indent`."""
    separators = (",", ": ") if indent else (",", ":")
    try:
        text = json.dumps(
            value, separators=separators, indent=indent, ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise SigningError(f"{provider}: the event data is not JSON ({exc})") from None
    return text.encode()


def iso(timestamp: int, fraction: str = "") -> str:
    """RFC 3339 in UTC: `2026-12-01T23:06:59Z`, or with `fraction` (`MILLIS`, `.123456`)
    before the Z."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def derived(event_id: str, length: int = 16, salt: str = "") -> str:
    """A stable hex string derived from the event id, for a sample object's own id."""
    return hashlib.sha256(f"{salt}:{event_id}".encode()).hexdigest()[:length]


def derived_number(event_id: str, digits: int = 9, salt: str = "") -> int:
    """A stable positive integer of `digits` digits derived from the event id."""
    low: int = 10 ** (digits - 1)
    return low + int(derived(event_id, 15, salt), 16) % (9 * low)


def derived_uuid(event_id: str, salt: str = "") -> str:
    """A stable UUID-shaped string (version 4 layout) derived from the event id."""
    h = derived(event_id, 32, salt)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def object_or_sample(
    event: EventToSign, provider: str, what: str, sample: Callable[[], Any]
) -> Any:
    """The event object: `data` (a JSON object, in place of `what`), else the sample."""
    data = event_object(event, provider, what)
    return sample() if data is None else data


@dataclass(frozen=True, slots=True)
class Envelope:
    """A provider's request before it is signed: the body (a JSON value, or a form's
    fields) and the delivery headers besides the signature."""

    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    indent: int | None = None  # the JSON body's, where the provider indents it (Stripe)


def set_header(headers: dict[str, str], name: str, value: str) -> None:
    """Set `name`, or the header of that name in another case, which keeps its spelling
    (HTTP headers are case-insensitive, and recipes lower-case the names they read)."""
    spelt = next((k for k in headers if k.lower() == name.lower()), name)
    headers[spelt] = value
