"""TLS (a throwaway CA made with openssl here, mutual TLS) and one ACL user per process.

Every process (receiver, worker, dashboard, `webhooks` command) works over `rediss://` with
its own user; and a refused TLS handshake or a wrong password is, from each of them, one
line that names the problem and never the password: the receiver answers 503 (readyz too),
the worker logs and retries, the dashboard answers 503, the command exits 1.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from redis import Redis

from tests.conftest import AUTH, SECRET, webhooks
from tests.ha.harness import LinkProxy, wait_for
from tests.processes import Process, Stack, send
from workers.dev.redis_server import RedisServer, free_port

# What each process may do: everything but the dangerous commands (CONFIG, KEYS, FLUSHALL,
# DEBUG, ...), as a managed service's default user often is. INFO is allowed to the
# receiver (its startup checks) and the worker (RQ reads the server's version).
USERS = {
    "receiver": "~* &* +@all -@dangerous +info",
    "worker": "~* &* +@all -@dangerous +info",
    "dashboard": "~* &* +@all -@dangerous +info",
    "operator": "~* &* +@all -@dangerous +info",
}


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_pki(directory: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it."""

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=webhooks-test-ca")  # fmt: skip
    for name, extension in (
        ("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
        ("client", "extendedKeyUsage=clientAuth"),
    ):
        (directory / f"{name}.ext").write_text(extension + "\n")
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
            "-extfile", f"{name}.ext")  # fmt: skip
    return Pki(*(directory / f for f in ("ca.crt", "server.crt", "server.key", "client.crt",
                                         "client.key")))  # fmt: skip


@pytest.fixture
def tls_redis(make_redis: Callable[..., RedisServer], tmp_path: Path) -> tuple[RedisServer, Pki]:
    pki = make_pki(tmp_path)
    port = free_port()
    users: list[str] = ["--user", "default", "off"]
    for user, rules in USERS.items():
        users += ["--user", user, "on", f">{user}-password", *rules.split()]
    server = make_redis(
        port=port,
        options={
            "port": "0",
            "tls-port": str(port),
            "tls-cert-file": str(pki.server_cert),
            "tls-key-file": str(pki.server_key),
            "tls-ca-cert-file": str(pki.ca),
            "tls-auth-clients": "yes",
        },
        extra=tuple(users),
        client=client_kwargs(pki, "operator"),
    )
    return server, pki


def client_kwargs(pki: Pki, user: str) -> dict[str, object]:
    return {
        "ssl": True,
        "ssl_ca_certs": str(pki.ca),
        "ssl_certfile": str(pki.client_cert),
        "ssl_keyfile": str(pki.client_key),
        "username": user,
        "password": f"{user}-password",
    }


def url(
    server: RedisServer,
    pki: Pki,
    user: str,
    password: str = "",
    ca: bool = True,
    port: int | None = None,
) -> str:
    query = f"ssl_certfile={pki.client_cert}&ssl_keyfile={pki.client_key}"
    if ca:
        query += f"&ssl_ca_certs={pki.ca}"
    where = f"127.0.0.1:{port or server.port}"
    return f"rediss://{user}:{password or user + '-password'}@{where}/0?{query}"


def answered(url: str, process: Process) -> None:
    def up() -> bool:
        if process.popen.poll() is not None:
            raise SystemExit(f"{process.name} exited:\n{process.output()}")
        try:
            httpx.get(url, timeout=1, auth=AUTH)
            return True
        except httpx.HTTPError:
            return False

    wait_for(up, 20, f"{process.name} to answer")


def test_every_process_works_over_mutual_tls_with_its_own_acl_user(
    tls_redis: tuple[RedisServer, Pki],
    make_stack: Callable[..., Stack],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, pki = tls_redis
    stack = make_stack(url(server, pki, "receiver"), WEBHOOK_HANDLERS="tests.ha.handlers")
    web = stack.start("web")
    worker = stack.start("worker", REDIS_URL=url(server, pki, "worker"))
    dashboard = stack.start("dashboard", REDIS_URL=url(server, pki, "dashboard"))
    assert send(web.url, "evt_tls").json()["status"] == "accepted"
    redis = Redis(port=server.port, **client_kwargs(pki, "operator"))  # type: ignore[arg-type]
    wait_for(lambda: redis.get("effects:evt_tls") == b"1", 30, "the event over TLS")
    answered(dashboard.url, dashboard)
    assert httpx.get(f"{dashboard.url}/0/data/queues.json", auth=AUTH).status_code == 200
    assert httpx.get(f"{web.url}/readyz").status_code == 200
    monkeypatch.setenv("REDIS_URL", url(server, pki, "operator"))
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    assert webhooks("dead", "list").exit_code == 0
    for process in (web, worker, dashboard):
        assert "Traceback" not in process.output()


@pytest.mark.parametrize(
    ("broken", "line"),
    [
        ("no CA", "TLS handshake refused: the server's certificate was not accepted"),
        ("wrong password", "authentication refused: wrong user or password in REDIS_URL"),
    ],
)
def test_a_refused_handshake_or_password_is_one_line_from_every_process_and_never_a_500(
    tls_redis: tuple[RedisServer, Pki],
    make_stack: Callable[..., Stack],
    monkeypatch: pytest.MonkeyPatch,
    broken: str,
    line: str,
) -> None:
    server, pki = tls_redis
    wrong = "not-the-password-4711"

    def bad_url(user: str, port: int | None = None) -> str:
        if broken == "no CA":
            return url(server, pki, user, ca=False, port=port)
        return url(server, pki, user, password=wrong, port=port)

    # The worker reaches Redis through a proxy that counts its connections: its retries.
    proxy = LinkProxy(server.port)
    stack = make_stack(bad_url("receiver"))
    web = stack.start("web")
    worker = stack.start("worker", REDIS_URL=bad_url("worker", proxy.port))
    dashboard = stack.start("dashboard", REDIS_URL=bad_url("dashboard"))

    delivery = send(web.url, "evt_refused")
    assert delivery.status_code == 503 and "nothing was accepted" in delivery.json()["detail"]
    assert httpx.get(f"{web.url}/readyz").status_code == 503
    wait_for(lambda: line in web.output(), 10, "the receiver's line")
    wait_for(lambda: line in worker.output(), 30, "the worker's line")
    answered(dashboard.url, dashboard)
    page = httpx.get(f"{dashboard.url}/", auth=AUTH)
    assert page.status_code == 503 and line in page.text
    monkeypatch.setenv("REDIS_URL", bad_url("operator"))
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    result = webhooks("dead", "list")
    assert result.exit_code == 1 and line in result.output
    # The Redis it uses, then the error: one line each.
    said, error = result.output.strip().splitlines()
    assert said.startswith("redis: ") and error.startswith("Error: ") and line in error

    # The worker keeps retrying (a connection each time): still one line for one problem.
    tried = len(proxy.sockets)
    wait_for(lambda: len(proxy.sockets) >= tried + 2 * 3, 30, "three more tries")
    assert worker.popen.poll() is None and worker.output().count(line) == 1
    outputs = [web.output(), worker.output(), dashboard.output(), result.output, page.text]
    for output in outputs:
        assert "Traceback" not in output
        for secret in (wrong, "receiver-password", "worker-password", "dashboard-password"):
            assert secret not in output
    proxy.close()
