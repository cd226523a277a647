"""`plaid`: an ES256 JWT in `Plaid-Verification`, with a key fetched by its id.

The JWT header must say `alg: ES256` (nothing else is accepted: no `none`, no HMAC) and
name its key (`kid`, letters, digits, `-` and `_`). The claims must hold `iat` within the
tolerance (Plaid says 5 minutes) and `request_body_sha256`, the hex SHA-256 of the exact
body, compared in constant time. Header and claims are checked before the key is
fetched, so a token that would be refused anyway costs no call to Plaid. The key comes
from Plaid's `/webhook_verification_key/get`, called with the API credentials
(WEBHOOK_CLIENT_ID_<NAME>, WEBHOOK_SECRET_<NAME> = the API secret) on
WEBHOOK_API_BASE_<NAME> (default production), and is cached; an expired key is refused.

Plaid sends no id: the id is the body's SHA-256. The type is
`<webhook_type>.<webhook_code>` (`TRANSACTIONS.SYNC_UPDATES_AVAILABLE`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature as BadSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from app.errors import InvalidSignature
from app.keyfetch import Fetch, KeyFetcher, KeyRefused
from app.providers.base import Delivery, Verifier, check_window, event_id_from, header
from app.providers.fields import body_digest, json_path
from app.providers.json_body import parse_json_value, strict_json
from app.providers.request import Inbound
from app.sources import ConfigError, SourceConfig

DEFAULT_API = "https://production.plaid.com"
MAX_TOKEN = 4096
# Plaid's key ids are UUIDs; letters, digits, `-` and `_` allow for any similar form.
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


@dataclass(frozen=True, slots=True)
class VerificationKey:
    key: ec.EllipticCurvePublicKey
    expired_at: float | None


def _b64url(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidSignature("malformed Plaid-Verification token") from None


def _object(raw: bytes) -> dict[str, Any]:
    try:
        value = strict_json(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise InvalidSignature("malformed Plaid-Verification token")
    return value


def load_jwk(raw: bytes) -> VerificationKey:
    """Plaid's answer `{"key": {JWK}}` as a P-256 public key; ValueError otherwise."""
    answer = json.loads(raw)
    jwk = answer.get("key") if isinstance(answer, dict) else None
    if not isinstance(jwk, dict) or (jwk.get("kty"), jwk.get("crv")) != ("EC", "P-256"):
        raise ValueError("not a P-256 JWK")
    try:
        x, y = (int.from_bytes(_b64url(str(jwk[c])), "big") for c in ("x", "y"))
    except (KeyError, InvalidSignature):
        raise ValueError("not a P-256 JWK") from None
    expired = jwk.get("expired_at")
    if isinstance(expired, bool) or not isinstance(expired, int | float | None):
        raise ValueError("malformed expired_at")
    return VerificationKey(
        ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key(),
        None if expired is None else float(expired),
    )


class PlaidVerifier(Verifier):
    provider = "plaid"
    fetches_keys = True

    def __init__(self, source: SourceConfig, fetcher: KeyFetcher) -> None:
        super().__init__(source)
        self.fetcher = fetcher
        self.tolerance = source.window(300)
        self.client_id = source.variable("WEBHOOK_CLIENT_ID_")
        if not self.client_id:
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_CLIENT_ID_')} is not set: Plaid's keys are "
                "fetched with the API client id and secret"
            )
        self.api = (source.variable("WEBHOOK_API_BASE_") or DEFAULT_API).rstrip("/")
        if not fetcher.allowed(self.api):
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_API_BASE_')}: origin not on WEBHOOK_FETCH_ALLOW"
            )

    async def check_async(self, request: Inbound) -> Delivery:
        token = header(request.headers, "plaid-verification")
        parts = token.split(".")
        if len(token) > MAX_TOKEN or len(parts) != 3:
            raise InvalidSignature("malformed Plaid-Verification token")
        head, claims = _object(_b64url(parts[0])), _object(_b64url(parts[1]))
        kid = head.get("kid")
        if head.get("alg") != "ES256" or not isinstance(kid, str) or not KEY_ID.fullmatch(kid):
            raise InvalidSignature("Plaid-Verification must be ES256 with a key id")
        raw_signature = _b64url(parts[2])
        if len(raw_signature) != 64:
            raise InvalidSignature("malformed Plaid-Verification signature")
        # The claims are checked before the key is fetched (the signature, checked after,
        # covers these same bytes): a token for another body, or an old one, must not
        # cost a call to Plaid's API.
        self._check_claims(claims, request)
        key = await self._key(kid)
        signature = encode_dss_signature(
            int.from_bytes(raw_signature[:32], "big"), int.from_bytes(raw_signature[32:], "big")
        )
        try:
            key.key.verify(signature, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
        except BadSignature:
            raise InvalidSignature("signature does not match") from None
        if key.expired_at is not None and key.expired_at < request.now:
            raise InvalidSignature("the verification key has expired")
        body = parse_json_value(request.body)
        kind = [json_path(body, k) for k in ("webhook_type", "webhook_code")]
        return Delivery(
            event_id=event_id_from(body_digest(request.body), "body"),
            event_type=".".join(k for k in kind if isinstance(k, str)),
        )

    def _check_claims(self, claims: dict[str, Any], request: Inbound) -> None:
        body_hash = claims.get("request_body_sha256")
        actual = hashlib.sha256(request.body).hexdigest().encode()
        if not isinstance(body_hash, str) or not hmac.compare_digest(body_hash.encode(), actual):
            raise InvalidSignature("request_body_sha256 does not match the body")
        issued = claims.get("iat")
        if isinstance(issued, bool) or not isinstance(issued, int) or abs(issued) > 10**12:
            raise InvalidSignature("Plaid-Verification has no iat")
        check_window(issued, request.now, self.tolerance, future_too=True)

    async def _key(self, kid: str) -> VerificationKey:
        credentials = {
            "client_id": self.client_id,
            "secret": self.source.secrets[0].get_secret_value(),
            "key_id": kid,
        }
        fetch = Fetch(f"{self.api}/webhook_verification_key/get", credentials)
        try:
            return await self.fetcher.load(
                f"plaid:{self.api}:{kid}", fetch, load_jwk, source=self.source.name
            )
        except KeyRefused:
            raise InvalidSignature("unknown verification key") from None
