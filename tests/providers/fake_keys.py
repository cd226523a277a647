"""A local stand-in for AWS SNS's certificate host and Plaid's key endpoint, so no test
reaches the internet. One HTTP server on 127.0.0.1 for the whole session, started on first
use and stopped at the session's end (`conftest.py`); tests allow it with
`WEBHOOK_FETCH_ALLOW=http://127.0.0.1:*`.

- `GET /SimpleNotificationService-<md5 of seed>.pem`: the certificate of a test "SNS" key
  (self-signed, like the signing certificates SNS serves, CN sns.amazonaws.com).
- `GET /sns/confirm?Token=...`: a SubscribeURL; the tokens it saw are kept.
- `POST /webhook_verification_key/get`: Plaid's key endpoint, checking the credentials.
- `fail` makes every answer a 500 (a key server down).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import NameOID

PLAID_CLIENT_ID = "plaid-client-1"
TOPIC = "arn:aws:sns:us-east-1:123456789012:orders"


@dataclass
class State:
    certificates: dict[str, bytes] = field(default_factory=dict)
    jwks: dict[str, dict[str, Any]] = field(default_factory=dict)
    plaid_secrets: set[str] = field(default_factory=set)
    confirmed: list[str] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)
    fail: bool = False


STATE = State()
_server: ThreadingHTTPServer | None = None
_thread: threading.Thread | None = None
_lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        STATE.hits.append(self.path)
        parts = urlsplit(self.path)
        if STATE.fail:
            return self._send(500, b"{}")
        if parts.path == "/sns/confirm":
            STATE.confirmed.extend(parse_qs(parts.query).get("Token", []))
            return self._send(200, b"<ConfirmSubscriptionResponse/>", "text/xml")
        pem = STATE.certificates.get(parts.path)
        self._send(200, pem, "application/x-pem-file") if pem else self._send(404, b"{}")

    def do_POST(self) -> None:
        STATE.hits.append(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        asked = json.loads(self.rfile.read(length) or b"{}")
        if STATE.fail:
            return self._send(500, b"{}")
        if self.path != "/webhook_verification_key/get":
            return self._send(404, b"{}")
        if (
            asked.get("client_id") != PLAID_CLIENT_ID
            or asked.get("secret") not in STATE.plaid_secrets
        ):
            return self._send(400, b'{"error_code": "INVALID_API_KEYS"}')
        jwk = STATE.jwks.get(asked.get("key_id", ""))
        if jwk is None:
            return self._send(400, b'{"error_code": "INVALID_WEBHOOK_VERIFICATION_KEY_ID"}')
        self._send(200, json.dumps({"key": jwk, "request_id": "r1"}).encode())


def url() -> str:
    global _server, _thread
    with _lock:
        if _server is None:
            _server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            _thread = threading.Thread(target=_server.serve_forever, daemon=True)
            _thread.start()
    return f"http://127.0.0.1:{_server.server_address[1]}"


def stop() -> None:
    """Stop the server, if it was started, and close its socket (the session's end: see
    `conftest.py`). The certificates made so far name its port, so they go too."""
    global _server, _thread
    with _lock:
        if _server is not None:
            _server.shutdown()
            _server.server_close()
        if _thread is not None:
            _thread.join(timeout=5)
        _server = _thread = None
        _certificates.clear()


@dataclass(frozen=True)
class Certificate:
    private: rsa.RSAPrivateKey
    url: str


_certificates: dict[str, Certificate] = {}


def sns_certificate_pem(private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    """A self-signed certificate for sns.amazonaws.com, valid now, of the given key."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .sign(private, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def certificate(seed: str) -> Certificate:
    if seed not in _certificates:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        # The path AWS serves certificates at, the only one the receiver fetches.
        name = hashlib.md5(seed.encode()).hexdigest()  # a name, not a digest
        path = f"/SimpleNotificationService-{name}.pem"
        STATE.certificates[path] = sns_certificate_pem(private)
        _certificates[seed] = Certificate(private, url() + path)
    return _certificates[seed]


def sns_string_to_sign(message: dict[str, str]) -> bytes:
    """AWS's documented canonical form ("Verifying the signatures of Amazon SNS messages"),
    written here independently of the receiver's."""
    if message["Type"] == "Notification":
        keys = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
    else:
        keys = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
    return "".join(f"{k}\n{message[k]}\n" for k in keys if k in message).encode()


def sns_message(cert: Certificate, message_id: str, ts: int, **fields: str) -> dict[str, str]:
    message = {
        "Type": "Notification",
        "MessageId": message_id,
        "TopicArn": TOPIC,
        "Subject": "order",
        "Message": '{"order": 1}',
        "Timestamp": datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "SignatureVersion": "2",
        "SigningCertURL": cert.url,
        "UnsubscribeURL": url() + "/sns/unsubscribe",
        **fields,
    }
    if message["Type"] != "Notification":
        message.pop("Subject", None)
        message.pop("UnsubscribeURL", None)
        message.setdefault("Token", "tok-" + message_id)
        message.setdefault("SubscribeURL", f"{url()}/sns/confirm?Token={message['Token']}")
    digest = hashes.SHA1() if message["SignatureVersion"] == "1" else hashes.SHA256()
    signature = cert.private.sign(sns_string_to_sign(message), padding.PKCS1v15(), digest)
    message["Signature"] = base64.b64encode(signature).decode()
    return message


@dataclass(frozen=True)
class JwkSigner:
    private: ec.EllipticCurvePrivateKey
    kid: str


def jwk_signer(seed: str, expired_at: int | None = None) -> JwkSigner:
    url()
    private = ec.derive_private_key(
        int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big"), ec.SECP256R1()
    )
    numbers = private.public_key().public_numbers()
    kid = f"kid-{seed}" + ("" if expired_at is None else "-expired")

    def b64(n: int) -> str:
        return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()

    STATE.jwks[kid] = {
        "alg": "ES256",
        "crv": "P-256",
        "kid": kid,
        "kty": "EC",
        "use": "sig",
        "x": b64(numbers.x),
        "y": b64(numbers.y),
        "created_at": 1560466143,
        "expired_at": expired_at,
    }
    STATE.plaid_secrets.add(f"plaid-secret-{seed}-0123456789")
    return JwkSigner(private, kid)
