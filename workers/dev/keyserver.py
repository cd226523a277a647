"""The dev stack's stand-in for the key servers of AWS SNS and Plaid.

`webhooks dev` runs it (only when an SNS or Plaid source has a development key, see
`devkeys.py`) on 127.0.0.1, on a free port, in a daemon thread, for as long as the stack is
up. The receiver fetches from it what it would fetch from the provider, the origin being on
WEBHOOK_FETCH_ALLOW for the stack's processes:

- `GET /SimpleNotificationService-<32 hex>.pem`: an SNS source's certificate, at the path
  its `SigningCertURL` names (`devkeys.DevKey.certificate_path`).
- `POST /webhook_verification_key/get` with `{"client_id", "secret", "key_id"}` (JSON):
  Plaid's key endpoint. The credentials must be a Plaid source's (WEBHOOK_CLIENT_ID_<NAME>,
  WEBHOOK_SECRET_<NAME> as `devkeys.dev_key_env` sets them), the key id that source's; the
  answer is Plaid's, `{"key": <JWK>, "request_id": ...}`; otherwise a 400 with Plaid's
  error codes (the verifier refuses the request: a 4xx is a key that does not exist).

Anything else is a 404. It logs nothing: no request, and never a key.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from workers.dev.devkeys import record_key_server
from workers.dev.keypair import DevKey

PLAID_KEY_PATH = "/webhook_verification_key/get"
MAX_REQUEST = 16 * 1024


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        certificates: dict[str, bytes],
        plaid: list[tuple[str, str, dict[str, Any]]],
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.certificates = certificates
        # (client id, API secret, JWK) per Plaid source.
        self.plaid = plaid


def _plaid_error(code: str, message: str) -> dict[str, Any]:
    return {
        "error_type": "INVALID_INPUT",
        "error_code": code,
        "error_message": message,
        "display_message": None,
        "request_id": secrets.token_hex(8),
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5  # seconds a connection may idle: a stalled client holds no thread for long
    server_version = "webhooks-dev-keys"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode())

    def _not_found(self) -> None:
        self._json(404, {"error": "not found"})

    def do_GET(self) -> None:
        pem = self.server.certificates.get(self.path)
        if pem is None:
            return self._not_found()
        self._send(200, pem, "application/x-pem-file")

    def do_POST(self) -> None:
        if self.path != PLAID_KEY_PATH:
            return self._not_found()
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_REQUEST:
            self.close_connection = True
            return self._json(400, _plaid_error("INVALID_BODY", "a JSON body is required"))
        try:
            asked = json.loads(self.rfile.read(length))
        except (UnicodeDecodeError, ValueError):
            asked = None
        if not isinstance(asked, dict) or not all(
            isinstance(asked.get(k), str) for k in ("client_id", "secret", "key_id")
        ):
            return self._json(
                400,
                _plaid_error("INVALID_BODY", "client_id, secret and key_id are required"),
            )
        keys = [
            jwk
            for client_id, secret, jwk in self.server.plaid
            if hmac.compare_digest(client_id.encode(), asked["client_id"].encode())
            & hmac.compare_digest(secret.encode(), asked["secret"].encode())
        ]
        if not keys:
            return self._json(
                400, _plaid_error("INVALID_API_KEYS", "invalid client_id or secret provided")
            )
        jwk = next((k for k in keys if k["kid"] == asked["key_id"]), None)
        if jwk is None:
            return self._json(
                400,
                _plaid_error("INVALID_WEBHOOK_VERIFICATION_KEY_ID", "unknown key_id"),
            )
        self._json(200, {"key": jwk, "request_id": secrets.token_hex(8)})

    do_HEAD = _not_found
    do_PUT = _not_found
    do_DELETE = _not_found
    do_PATCH = _not_found


def start_key_server(
    keys: Sequence[DevKey], root: Path | None = Path()
) -> tuple[str, Callable[[], None]]:
    """Serve these keys' certificates (SNS) and JWKs (Plaid) on 127.0.0.1, on a free port.

    Returns the server's URL (`http://127.0.0.1:<port>`, an origin for WEBHOOK_FETCH_ALLOW
    and WEBHOOK_API_BASE_<NAME>) and the function that stops it (and may be called again).
    With `root`, the URL is kept in its `var/dev-keys/key-server.url` while it runs, for
    `devkeys.private_key_for` (SNS's SigningCertURL names it)."""
    certificates = {k.certificate_path: k.certificate for k in keys if k.provider == "sns"}
    plaid = [
        (k.plaid_client_id, k.plaid_secret, k.plaid_jwk()) for k in keys if k.provider == "plaid"
    ]
    server = _Server(certificates, plaid)
    # A short poll: `stop` waits for the loop to notice, at most this long.
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="dev-key-server", daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    if root is not None:
        record_key_server(url, root)
    lock = threading.Lock()
    stopped = False

    def stop() -> None:
        nonlocal stopped
        with lock:
            if stopped:
                return
            stopped = True
            if root is not None:
                record_key_server(None, root)
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    return url, stop
