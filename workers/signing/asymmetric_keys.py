"""What the asymmetric signers (`asymmetric.py`, `asymmetric_fetched.py`) and the dev stack's
key pairs (`workers/dev/devkeys.py`) derive alike from a key, and read alike from
`keys.private_key`: public forms, key ids, the refusal when there is no key."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import uuid
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes

from app.settings import SourceConfig
from workers.signing.base import Keys, SigningError

# SendGrid events carry the time they happened; the sample's is fixed so that its body,
# and so its id (a digest), is the same each time the same event is sent.
SAMPLE_TIME = 1_700_000_000
SIGNING_CERT_URL = "SigningCertURL"
PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----\r?\n?", re.DOTALL)
CERT_URL_LINE = re.compile(
    rb"^" + SIGNING_CERT_URL.encode() + rb":[ \t]*(\S+)[ \t]*\r?$", re.MULTILINE
)

# Who holds the private key, and what the source checks its signatures with instead.
HOLDER = {
    "discord": ("Discord", "Discord", "the application's public key ({secret})"),
    "sendgrid": ("SendGrid", "SendGrid", "SendGrid's verification (public) key ({secret})"),
    "sns": ("AWS signs SNS messages", "AWS", "the certificate AWS serves"),
    "plaid": ("Plaid", "Plaid", "the public key it fetches from Plaid's API"),
}


# --- what the dev stack and the signers derive alike from a key ---------------------------


def public_der(key: PublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sns_certificate_path(key: rsa.RSAPublicKey) -> str:
    """Where the dev key server serves the certificate of this key: AWS's one path shape,
    `/SimpleNotificationService-<32 hex>.pem`, named after the key (a name, not a check)."""
    return f"/SimpleNotificationService-{hashlib.sha256(public_der(key)).hexdigest()[:32]}.pem"


def plaid_key_id(key: ec.EllipticCurvePublicKey) -> str:
    """The `kid` of a P-256 key: a UUID, as Plaid's are, named after the key."""
    return str(uuid.UUID(bytes=hashlib.sha256(public_der(key)).digest()[:16], version=4))


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def plaid_jwk(key: ec.EllipticCurvePublicKey) -> dict[str, Any]:
    """The key as Plaid's `/webhook_verification_key/get` answers it (`{"key": <this>}`)."""
    numbers = key.public_numbers()
    return {
        "alg": "ES256",
        "crv": "P-256",
        "kid": plaid_key_id(key),
        "kty": "EC",
        "use": "sig",
        "x": b64url(numbers.x.to_bytes(32, "big")),
        "y": b64url(numbers.y.to_bytes(32, "big")),
        "created_at": SAMPLE_TIME,
        "expired_at": None,
    }


# --- keys -------------------------------------------------------------------------------


def no_key_message(source: SourceConfig) -> str:
    """Why this source cannot be signed without a private key, and how to get one: one line."""
    signs, holder, checks = HOLDER[source.provider]
    secret = source.variable_name("WEBHOOK_SECRET_")
    unset = {
        "discord": f" with {secret} unset",
        "sendgrid": f" with {secret} unset",
        "plaid": f" with {secret} and {source.variable_name('WEBHOOK_API_BASE_')} unset",
    }.get(source.provider, "")
    signs = signs if " " in signs else f"{signs} signs"
    checks = checks.format(secret=secret)
    return (
        f"source {source.name!r} ({source.provider}) cannot be signed: {signs} with a private "
        f"key only {holder} holds, and the source checks the signatures with {checks}; "
        f"to send to it, run it in `make run`'s stack{unset}, which makes a development key "
        "pair and configures the source with its public key"
    )


def load_private_key(keys: Keys, source: SourceConfig) -> PrivateKeyTypes | None:
    """The first private key block of `keys.private_key` (PEM), None when none loads;
    `SigningError` (why, and how to get one) when no key was given at all."""
    if not keys.private_key:
        raise SigningError(no_key_message(source))
    for block in PEM_BLOCK.finditer(keys.private_key):
        if block.group(1).endswith(b"PRIVATE KEY"):
            try:
                return serialization.load_pem_private_key(block.group(0), password=None)
            except (ValueError, TypeError):
                return None
    return None


def wrong_key(source: SourceConfig, what: str) -> SigningError:
    return SigningError(
        f"source {source.name!r}: the private key given is not an unencrypted PEM {what} "
        f"key, which {source.provider} signs with"
    )


def p256_key(keys: Keys, source: SourceConfig) -> ec.EllipticCurvePrivateKey:
    key = load_private_key(keys, source)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise wrong_key(source, "P-256")
    return key


def json_bytes(value: Any, source: SourceConfig) -> bytes:
    try:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    except (TypeError, ValueError) as exc:
        raise SigningError(f"source {source.name!r}: the data is not JSON ({exc})") from None


def hex_of(*parts: str, length: int = 32) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:length]


def snowflake(*parts: str) -> str:
    """A Discord-like id (18 digits) named after `parts`: the same parts, the same id."""
    number = int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big")
    return str(10**17 + number % (9 * 10**17))
