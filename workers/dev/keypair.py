"""One development key pair: made for a provider, checked against it, and what each
provider's configuration derives from it (its public value, Plaid's client id, secret and
JWK, the path of SNS's certificate).

`devkeys.py` decides which sources of `make run`'s stack get one and keeps them under
`var/dev-keys/`; the pytest plugin makes them in memory (`throwaway_key`). Discord's key is
Ed25519, SNS's RSA-2048 with a self-signed certificate in the same PEM, SendGrid's and
Plaid's P-256: each the kind its provider signs with.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import NameOID

from workers.signing.asymmetric_keys import (
    SIGNING_CERT_URL,
    plaid_jwk,
    plaid_key_id,
    public_der,
    sns_certificate_path,
)

_PRIVATE_PEM = re.compile(rb"-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----\n", re.DOTALL)


@dataclass(frozen=True, slots=True)
class DevKey:
    """One source's development key pair, as kept in `var/dev-keys/<source>.pem`."""

    source: str
    provider: str
    pem: bytes = field(repr=False)  # the private key (SNS: and its certificate)
    plaid_client_id: str = ""  # Plaid: the client id the key server accepts

    @property
    def private(self) -> PrivateKeyTypes:
        found = _PRIVATE_PEM.search(self.pem)
        if found is None:
            raise ValueError("no private key")
        return serialization.load_pem_private_key(found.group(0), password=None)

    @property
    def certificate(self) -> bytes:
        """SNS: the certificate's PEM, as the key server serves it: parsed and written
        again, never a slice of the file, which may hold the private key after it."""
        start = self.pem.find(b"-----BEGIN CERTIFICATE-----")
        if start < 0:
            return b""
        parsed = x509.load_pem_x509_certificate(self.pem[start:])
        return parsed.public_bytes(serialization.Encoding.PEM)

    @property
    def public_value(self) -> str:
        """What WEBHOOK_SECRET_<NAME> holds for Discord and SendGrid."""
        key = self.private
        if isinstance(key, ed25519.Ed25519PrivateKey):
            raw = key.public_key().public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw
            )
            return raw.hex()
        return base64.b64encode(public_der(key.public_key())).decode()

    @property
    def plaid_secret(self) -> str:
        """Plaid: the API secret the key server accepts, 30 hex characters like Plaid's,
        derived from the private key, so it needs no file of its own and is never stored."""
        der = self.private.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return hmac.new(der, b"plaid api secret", hashlib.sha256).hexdigest()[:30]

    @property
    def plaid_key_id(self) -> str:
        key = self.private
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return plaid_key_id(key.public_key())

    def plaid_jwk(self) -> dict[str, object]:
        key = self.private
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return plaid_jwk(key.public_key())

    @property
    def certificate_path(self) -> str:
        key = self.private
        assert isinstance(key, rsa.RSAPrivateKey)
        return sns_certificate_path(key.public_key())


def make_pem(provider: str) -> bytes:
    key: PrivateKeyTypes
    if provider == "discord":
        key = ed25519.Ed25519PrivateKey.generate()
    elif provider == "sns":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    if isinstance(key, rsa.RSAPrivateKey):
        pem += _certificate(key)
    return pem


def _certificate(key: rsa.RSAPrivateKey) -> bytes:
    """Self-signed, like the certificates SNS serves (whose chain the verifier never checks:
    it trusts the origin it fetched from). Valid for ten years: the file is reused."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.dev.localhost")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


def fits(pem: bytes, provider: str) -> bool:
    """The kept file holds a key of the provider's kind (a source's provider may change)."""
    try:
        key = DevKey("", provider, pem).private
    except (ValueError, TypeError):
        return False
    if provider == "discord":
        return isinstance(key, ed25519.Ed25519PrivateKey)
    if provider == "sns":
        if not isinstance(key, rsa.RSAPrivateKey):
            return False
        try:
            certificate = x509.load_pem_x509_certificate(DevKey("", provider, pem).certificate)
        except ValueError:
            return False
        return certificate.public_key() == key.public_key()
    return isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"


def derived_client_id(key: DevKey) -> str:
    """Plaid's client ids are 24 hex characters; this one is named after the key."""
    return hashlib.sha256(public_der(key.private.public_key())).hexdigest()[:24]


def throwaway_key(source: str, provider: str) -> DevKey:
    """A key pair of the provider's kind kept in memory only, never written: the pytest
    plugin's, made for each asymmetric source a test run uses."""
    key = DevKey(source, provider, make_pem(provider))
    return DevKey(source, provider, key.pem, derived_client_id(key)) if provider == "plaid" else key


def signing_pem(key: DevKey, key_server: str | None) -> bytes:
    """What a signer signs with (`Keys.private_key`): the key's PEM, and for SNS the
    `SigningCertURL:` line naming its certificate on the key server at `key_server`."""
    if key.provider == "sns" and key_server:
        return f"{SIGNING_CERT_URL}: {key_server}{key.certificate_path}\n".encode() + key.pem
    return key.pem
