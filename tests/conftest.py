"""Fixtures: a real redis-server the suite starts itself, and factories for the parts."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue, SimpleWorker
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry

from app.keys import job_id_for
from app.main import create_app
from app.settings import Settings
from workers import Event, handler
from workers.dev.redis_server import RedisServer
from workers.ops.cli import main
from workers.registry import registry
from workers.runtime.run import build_worker
from workers.runtime.stopping import end_listener
from workers.runtime.worker import WebhookWorker

# tests/testing/ runs user-style test modules through pytest itself, with the plugin.
pytest_plugins = ["pytester"]

SECRET = "test-secret-of-inbound"
# The dashboard login, in the settings tests build and in the stacks they start.
AUTH = ("ops", "dashboard-password")
# The variables of ours a developer's shell may have set.
OWN_VARIABLES = ("WEBHOOK_", "REPLAY_TOLERANCE", "RQ_DASHBOARD_", "REDIS_SENTINEL", "SENTRY_")
ROOT = Path(__file__).resolve().parent.parent
# Whether a test's call failed, for fixtures that say more at teardown when it did.
CALL_FAILED = pytest.StashKey[bool]()

if TYPE_CHECKING:
    from tests.processes import RedisProxy


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own configuration must not leak into what a test builds."""
    for name in list(os.environ):
        if name.startswith(OWN_VARIABLES) or name == "REDIS_URL":
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    registry.clear()
    yield
    registry.clear()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def make_redis(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Starts a Redis of a test's own (AOF, fsync always) with the given options; stops it."""
    servers: list[RedisServer] = []

    def make(**options: Any) -> RedisServer:
        server = RedisServer(tmp_path / f"redis-{len(servers)}", **options).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def make_proxy() -> Iterator[Callable[[int], RedisProxy]]:
    """A TCP proxy in front of a Redis port, closed when the test ends."""
    from tests.processes import RedisProxy

    proxies: list[RedisProxy] = []

    def make(port: int) -> RedisProxy:
        proxies.append(RedisProxy(port).start())
        return proxies[-1]

    yield make
    for proxy in proxies:
        proxy.close()


@pytest.fixture
def redis(redis_server: RedisServer) -> Iterator[Redis]:
    client = Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def make_settings(redis_server: RedisServer) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "redis_url": redis_server.url,
            "webhook_signing_secret": SECRET,
            "webhook_retry_intervals": "0",
            "webhook_max_retries": 2,
            "rq_dashboard_username": AUTH[0],
            "rq_dashboard_password": AUTH[1],
        }
        values.update(overrides)
        return Settings.load(_env_file=None, **values)

    return make


@pytest.fixture
def make_client(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(settings: Settings | None = None, **overrides: Any) -> TestClient:
        client = TestClient(create_app(settings or make_settings(**overrides)))
        client.__enter__()  # runs the lifespan, as uvicorn would
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def sign(body: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def event_body(event_id: str = "evt_1", event_type: str = "order.created", **extra: Any) -> bytes:
    return json.dumps({"id": event_id, "type": event_type, **extra}).encode()


@pytest.fixture
def post_event() -> Callable[..., Any]:
    def post(
        client: TestClient,
        body: bytes,
        secret: str = SECRET,
        source: str = "inbound",
        headers: dict[str, str] | None = None,
    ) -> Any:
        sent = {"X-Signature-256": sign(body, secret), **(headers or {})}
        return client.post(f"/webhooks/{source}", content=body, headers=sent)

    return post


def drain(settings: Settings, redis: Redis) -> WebhookWorker:
    """Run the real worker (forking, unless the settings say simple) until the queue is empty."""
    worker = build_worker(settings, connection=redis)
    worker.work(burst=True, logging_level="WARNING")
    return worker  # type: ignore[return-value]


def drain_with_rqs_worker(queue: Queue) -> None:
    """Run RQ's own worker (not ours) until the queue is empty."""
    RQsWorker([queue], connection=queue.connection).work(burst=True, logging_level="WARNING")


class RQsWorker(SimpleWorker):
    """RQ's SimpleWorker, whose stop does not wait for its listener's next message: under
    redis-py 8.2, RQ's `unsubscribe` joins a listener that may have gone back to a 60 s
    wait, which made two tests take a minute now and then. Our worker ends the listener
    the same way (`workers/runtime/stopping.py`)."""

    def unsubscribe(self) -> None:
        end_listener(self)
        super().unsubscribe()


@pytest.fixture
def run_worker(redis: Redis) -> Callable[[Settings], WebhookWorker]:
    return lambda settings: drain(settings, redis)


@pytest.fixture
def make_stack(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """Starts the Procfile's processes against a Redis, on free ports; stops them all."""
    from tests.processes import Stack

    stacks: list[Stack] = []

    def make(redis_url: str, **env: str) -> Stack:
        stack = Stack(
            {
                "REDIS_URL": redis_url,
                "HOST": "127.0.0.1",
                "WEBHOOK_SIGNING_SECRET": SECRET,
                "WEBHOOK_HANDLERS": "tests.e2e_handlers",
                "WEBHOOK_RETRY_INTERVALS": "1",
                "WEBHOOK_MAINTENANCE_INTERVAL": "10",
                "RQ_DASHBOARD_USERNAME": AUTH[0],
                "RQ_DASHBOARD_PASSWORD": AUTH[1],
                **env,
            },
            tmp_path,
        )
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.stop_all()
    if failed(request):
        # What each process said: a wait that timed out tells nothing of why by itself.
        for stack in stacks:
            for process in stack.processes:
                sys.stderr.write(f"--- {process.name} (exit {process.popen.returncode}) ---\n")
                sys.stderr.write(process.output()[-20_000:])
            sys.stderr.write(schedulers(stack.env["REDIS_URL"]))


def schedulers(redis_url: str) -> str:
    """Who holds each queue's scheduler lock on this Redis, and that process as `ps` sees
    it: a retry that never comes waits for the holder's scheduler."""
    lines = ["--- scheduler locks ---"]
    try:
        client = Redis.from_url(redis_url, socket_timeout=2, decode_responses=True)
        for key in client.scan_iter("rq:scheduler-lock:*"):
            holder = client.get(key)
            about = client.hgetall(f"rq:scheduler:{holder}")
            ps = subprocess.run(
                ["ps", "-o", "pid,ppid,stat,etime,args", "-p", about.get("pid", "0")],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            lines.append(f"{key} ttl={client.ttl(key)} holder={holder} {about}\n{ps}")
    except Exception as exc:  # a diagnostic must not hide the failure
        lines.append(repr(exc))
    return "\n".join(lines) + "\n"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


def failed(request: pytest.FixtureRequest) -> bool:
    return request.node.stash.get(CALL_FAILED, False)


@dataclass
class Harness:
    """A receiver app and the real worker on one Redis: send events, then drain the queue."""

    settings: Settings
    client: TestClient
    redis: Redis

    def send(self, body: bytes, secret: str = SECRET, source: str = "inbound") -> Any:
        return self.client.post(
            f"/webhooks/{source}", content=body, headers={"X-Signature-256": sign(body, secret)}
        )

    def event(self, event_id: str, event_type: str = "order.created", **extra: Any) -> Any:
        return self.send(event_body(event_id, event_type, **extra))

    def drain(self) -> WebhookWorker:
        return drain(self.settings, self.redis)


@pytest.fixture
def make_harness(
    make_settings: Callable[..., Settings], make_client: Callable[..., TestClient], redis: Redis
) -> Callable[..., Harness]:
    def make(**overrides: Any) -> Harness:
        settings = make_settings(**overrides)
        return Harness(settings, make_client(settings), redis)

    return make


def webhooks(*args: str, stdin: str | None = None) -> Result:
    """Run the `webhooks` command in-process (its environment comes from `cli_env`)."""
    return CliRunner().invoke(main, list(args), input=stdin)


def sync_crm(event: Event) -> None:
    """`make_dead_letters`' handler: it fails with the cause its event carries."""
    raise ValueError(event.payload["cause"])


# How the dead letters' errors start: the handler that failed.
SYNC_CRM = "tests.conftest.sync_crm"


@pytest.fixture
def make_dead_letters(
    make_harness: Callable[..., Harness], cli_env: Callable[[Settings], None]
) -> Callable[..., list[str]]:
    """Dead-letters events (id, type, error) through the real worker; returns their job ids
    and points the `webhooks` command at them."""

    def make(events: list[tuple[str, str, str]], **settings: Any) -> list[str]:
        harness = make_harness(**settings)
        cli_env(harness.settings)

        handler("inbound", "*")(sync_crm)
        for event_id, event_type, cause in events:
            harness.event(event_id, event_type, cause=cause)
        harness.drain()
        return [job_id_for("inbound", event_id) for event_id, _, _ in events]

    return make


def metric_value(text: str, name: str, **labels: str) -> float:
    """The value of one sample of Prometheus text, or 0 when absent."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.match(rf"^{re.escape(name)}(?:{{(.*)}})? (\S+)$", line)
        if match and ",".join(sorted((match.group(1) or "").split(","))) == wanted:
            return float(match.group(2))
    return 0.0


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[Settings], None]:
    """Points the `webhooks` command (which reads the environment) at a test's settings."""

    def point(settings: Settings) -> None:
        for name, value in {
            "REDIS_URL": settings.redis_url,
            "WEBHOOK_SIGNING_SECRET": SECRET,
            "WEBHOOK_MAX_RETRIES": str(settings.webhook_max_retries),
            "WEBHOOK_RETRY_INTERVALS": ",".join(map(str, settings.webhook_retry_intervals)),
        }.items():
            monkeypatch.setenv(name, value)

    return point


@pytest.fixture
def stand_in() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for `webhooks dev` (its command line names it)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "webhooks"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def signals_kept() -> Iterator[None]:
    """For a test that runs RQ's loop, the supervisor or the scheduler in its own process:
    they set SIGTERM's and SIGINT's handlers; put them back."""
    kept = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, previous in kept.items():
        signal.signal(signum, previous)


def make_due(redis: Redis, job_id: str, queue_name: str = "webhooks") -> None:
    """Turns a queued job into a retry whose time has come: off the queue, scheduled long
    ago, for a scheduler to put back."""
    queue = Queue(queue_name, connection=redis)
    redis.lrem(queue.key, 0, job_id)
    Job.fetch(job_id, connection=redis).set_status(JobStatus.SCHEDULED)
    redis.zadd(ScheduledJobRegistry(queue=queue).key, {job_id: 1})


@pytest.fixture
def limited_url(make_redis: Callable[..., RedisServer]) -> Callable[..., str]:
    """A Redis URL of an ACL user denied the given commands, on a Redis of the test's own."""

    def make(*denied: str) -> str:
        server = make_redis()
        with Redis(port=server.port) as admin:
            admin.acl_setuser(
                "limited",
                enabled=True,
                passwords=["+limited-pass"],
                keys=["*"],
                channels=["*"],
                commands=["+@all", *(f"-{name}" for name in denied)],
            )
        return f"redis://limited:limited-pass@127.0.0.1:{server.port}/0"

    return make
