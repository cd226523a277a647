"""What the header-HMAC signers share when they build a provider's envelope: JSON written
the way each provider writes it, sample ids derived from the event id, and the event's
type. Times and the checks on what goes in are every signer's (`envelope.iso`,
`base.object_data`, `base.header_value`).

Sample ids (an order number, a commit sha, a meeting UUID...) are derived from the event
id by hashing it, never drawn at random: the same event id gives the same body, so a
digest-id provider answers `duplicate`, and another event id gives another body, so a
provider whose id is an unsigned header (deduped by its body too) answers `accepted`.
"""

from __future__ import annotations

import hashlib
import json
import string
import uuid
from typing import Any

from workers.signing.base import EventToSign, SigningError
from workers.signing.defaults import DEFAULT_TYPE

ALPHANUMERIC = string.ascii_letters + string.digits
URL_SAFE = ALPHANUMERIC + "-_"


def compact(value: Any) -> bytes:
    """Minified UTF-8 JSON, as most providers send it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def spaced(value: Any) -> bytes:
    """Python's default `json.dumps` (`, ` and `: `, ASCII escapes): Dropbox's notifications."""
    return json.dumps(value).encode()


def php_json(value: Any) -> bytes:
    """PHP's `json_encode` defaults, as WordPress sends: ASCII escapes and `\\/`."""
    return json.dumps(value, separators=(",", ":")).replace("/", "\\/").encode()


def _seed(event_id: str, label: str) -> bytes:
    return hashlib.sha256(f"{label}\0{event_id}".encode()).digest()


def number(event_id: str, label: str, digits: int) -> int:
    """A number of exactly `digits` digits, derived from the event id."""
    low = int(10 ** (digits - 1))
    return low + int.from_bytes(_seed(event_id, label), "big") % (9 * low)


def hex_id(event_id: str, label: str, length: int = 40) -> str:
    """Lower-case hex (a commit sha, a webhook id), derived from the event id."""
    return hashlib.sha256(_seed(event_id, label)).hexdigest()[:length]


def uuid_id(event_id: str, label: str) -> str:
    """A version-4 UUID derived from the event id."""
    return str(uuid.UUID(bytes=_seed(event_id, label)[:16], version=4))


def token(event_id: str, label: str, length: int, alphabet: str = ALPHANUMERIC) -> str:
    """`length` characters of `alphabet` (a Slack challenge, Xero's entropy, an account id)."""
    value = int.from_bytes(_seed(event_id, label) + _seed(event_id, label + "+"), "big")
    out = []
    for _ in range(length):
        value, index = divmod(value, len(alphabet))
        out.append(alphabet[index])
    return "".join(out)


def type_or(event: EventToSign, provider: str) -> str:
    """The event's type; the provider's usual one (`DEFAULT_TYPE`) when it has none."""
    return event.event_type or DEFAULT_TYPE[provider]


def constant_type(event: EventToSign, provider: str, constant: str) -> None:
    """Providers whose type is fixed (Dropbox's `notification`): any other is a mistake
    the receiver would never dispatch, so it is refused rather than silently dropped."""
    if event.event_type not in ("", constant):
        raise SigningError(
            f"{provider} events have no type of their own: the receiver dispatches every "
            f"one as {constant!r}, not {event.event_type!r}"
        )
