"""Checking signatures and tokens: the one place where what a request carries is compared
with what the configured secrets make of it.

Every comparison is constant-time and none exits early: every configured secret (rotation)
is tried against every signature sent, so the time taken tells neither which secret nor
which signature came close.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Sequence

from app.errors import InvalidSignature

DIGESTS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "sha512": hashlib.sha512}


def hmac_digest(algorithm: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, DIGESTS[algorithm]).digest()


def any_signature_matches(expected: Iterable[bytes], given: Iterable[bytes]) -> bool:
    """True when any given signature (or token) equals any expected one, each pair
    compared in constant time."""
    matched = False
    given = list(given)
    for digest in expected:
        for candidate in given:
            matched |= hmac.compare_digest(digest, candidate)
    return matched


def matching_key(
    algorithm: str, keys: Sequence[bytes], message: bytes, given: Sequence[bytes]
) -> bytes:
    """The configured key whose HMAC of `message` matches one of the given signatures,
    else `InvalidSignature`."""
    found = b""
    for key in keys:
        if any_signature_matches([hmac_digest(algorithm, key, message)], given) and not found:
            found = key
    if not found:
        raise InvalidSignature("signature does not match")
    return found


def check_hmac(keys: Sequence[bytes], message: bytes, given: Sequence[bytes]) -> None:
    """Raise `InvalidSignature` unless HMAC-SHA256(key, message) matches a given signature
    for some key."""
    matching_key("sha256", keys, message, given)


def decode_signatures(
    items: Iterable[str], prefix: str, decode: Callable[[str], bytes | None], size: int
) -> list[bytes]:
    """The signatures among `items` (the parts of a signature header): each that starts with
    `prefix` (`sha256=`, `v1,`) and decodes to a digest of `size` bytes. The others are
    ignored, as the providers' SDKs ignore other schemes; the caller refuses a header that
    holds none."""
    decoded = [decode(item.removeprefix(prefix)) for item in items if item.startswith(prefix)]
    return [sig for sig in decoded if sig is not None and len(sig) == size]
