"""Local fakes of Stripe's List Events and GitHub's hook deliveries APIs, for replay tests.

Each can be told to answer 429 (with Retry-After) or to drop the connection a few times,
to answer every request with one error, or to quote the credentials it was sent in the
error of a refused login (as APIs that echo what they refused do).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class FakeApi:
    events: list[dict[str, Any]] = field(default_factory=list)  # Stripe, newest first
    deliveries: list[dict[str, Any]] = field(default_factory=list)  # GitHub, newest first
    key: str = "sk_test_fake"
    page_size: int = 2
    throttle: int = 0  # answer 429 this many times
    drop: int = 0  # close the connection this many times
    error: tuple[int, object] | None = None  # (status, JSON body) for every request
    echo_credentials: bool = False  # a refused login's error quotes the Authorization sent
    requests: list[tuple[str, str]] = field(default_factory=list)
    redelivered: list[int] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeApi:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self, status: int, body: object, headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _gate(self) -> bool:
                api.requests.append((self.command, self.path))
                if api.drop:
                    api.drop -= 1
                    self.connection.close()
                    return False
                if api.throttle:
                    api.throttle -= 1
                    self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                    return False
                if api.error is not None:
                    self._send(*api.error)
                    return False
                sent = self.headers.get("Authorization") or ""
                if sent != f"Bearer {api.key}":
                    quoted = f": {sent}" if api.echo_credentials else ""
                    self._send(
                        401,
                        {
                            "error": {"message": f"Invalid API Key provided{quoted}"},
                            "message": f"Bad credentials{quoted}",
                        },
                    )
                    return False
                return True

            def do_GET(self) -> None:
                if not self._gate():
                    return
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/v1/events":
                    self._stripe(query)
                elif url.path.endswith("/deliveries"):
                    self._github(query)
                else:
                    self._send(404, {"message": "Not Found"})

            def do_POST(self) -> None:
                if not self._gate():
                    return
                delivery_id = int(self.path.rstrip("/").split("/")[-2])
                api.redelivered.append(delivery_id)
                self._send(202, {})

            def _stripe(self, query: dict[str, str]) -> None:
                since = int(query["created[gte]"])
                until = int(query.get("created[lte]", 2**62))
                matching = [e for e in api.events if since <= e["created"] <= until]
                after = query.get("starting_after")
                if after:
                    index = [e["id"] for e in matching].index(after)
                    matching = matching[index + 1 :]
                page = matching[: api.page_size]
                self._send(
                    200, {"object": "list", "data": page, "has_more": len(matching) > api.page_size}
                )

            def _github(self, query: dict[str, str]) -> None:
                start = int(query.get("cursor", "0"))
                page = api.deliveries[start : start + api.page_size]
                headers = {}
                if start + api.page_size < len(api.deliveries):
                    base = self.path.split("?")[0]
                    headers["Link"] = (
                        f'<{api.url}{base}?per_page=100&cursor={start + api.page_size}>; rel="next"'
                    )
                self._send(200, page, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
