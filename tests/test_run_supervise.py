"""Supervising the worker (`workers/runtime/run.py`): Redis unreachable at start is waited
for, not a crash; a loop that ends by itself is restarted after a growing delay."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from redis import Redis
from rq.exceptions import StopRequested

from app.settings import ConfigError, Settings
from tests.processes import RedisProxy
from workers import handler
from workers.dev.redis_server import RedisServer, free_port
from workers.runtime import run
from workers.runtime.spans import NO_SPANS
from workers.runtime.worker import WebhookWorker

pytestmark = pytest.mark.usefixtures("signals_kept")


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The supervisor's sleeps, recorded instead of slept (its clock otherwise real)."""
    slept: list[float] = []
    monkeypatch.setattr(run, "time", SimpleNamespace(sleep=slept.append, monotonic=time.monotonic))
    return slept


@pytest.fixture(autouse=True)
def _no_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler's process is not what these tests watch."""
    monkeypatch.setattr(WebhookWorker, "_start_scheduler", lambda self, *a, **k: None)


def said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "webhooks"]


def test_redis_unreachable_at_start_is_waited_for_then_the_worker_runs(
    make_settings: Callable[..., Settings],
    make_redis: Callable[..., RedisServer],
    sleeps: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    settings = make_settings(redis_url=f"redis://127.0.0.1:{port}/0", webhook_worker_mode="simple")
    probes: list[float] = []

    def probe_sleep(seconds: float) -> None:
        probes.append(seconds)
        if len(probes) == 2:  # Redis comes up after the first probe failed
            make_redis(port=port)

    monkeypatch.setattr(run, "time", SimpleNamespace(sleep=probe_sleep, monotonic=time.monotonic))
    caplog.set_level(logging.INFO, logger="webhooks")

    run.supervise(settings, burst=True, spans=NO_SPANS)

    assert probes == [run.PROBE_EVERY, run.PROBE_EVERY]
    messages = [r.getMessage() for r in said(caplog)]
    # Said once while it lasted (not per probe), and once when it was over.
    assert [m for m in messages if m.startswith("redis unavailable")] == [messages[0]]
    assert "connection refused" in messages[0]
    assert messages.count("redis reachable again") == 1


def test_a_worker_loop_ending_by_itself_is_restarted_after_a_doubling_delay(
    make_settings: Callable[..., Settings],
    sleeps: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = make_settings(webhook_worker_mode="simple")
    calls: list[str] = []

    def dequeue(self: WebhookWorker, timeout: int | None, max_idle_time: int | None = None) -> Any:
        calls.append(self.name)
        if len(calls) < 3:
            # Anything but Redis: RQ logs it and ends its loop, as if asked to stop.
            raise RuntimeError("a bug in the loop")
        self.stop_signalled = True
        raise StopRequested

    monkeypatch.setattr(WebhookWorker, "dequeue_job_and_maintain_ttl", dequeue)

    run.supervise(settings, burst=False, spans=NO_SPANS)

    assert len(set(calls)) == 3  # a worker built afresh each time
    assert sleeps == [1.0, 2.0]
    restarts = [
        r.__dict__["retry_in"]
        for r in said(caplog)
        if r.getMessage() == "worker loop ended without a stop request; restarting"
    ]
    assert restarts == [1.0, 2.0]


def test_a_handler_module_that_cannot_be_imported_is_a_configuration_error(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(webhook_handlers="tests.no_such_handlers")
    with pytest.raises(
        ConfigError, match=r"WEBHOOK_HANDLERS: cannot import .tests\.no_such_handlers."
    ):
        run.import_handlers(settings)


def test_handlers_for_a_source_that_is_not_configured_are_warned_about(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    handler("billing", "invoice.paid")(lambda event: None)  # a module registered it
    run.import_handlers(make_settings(webhook_handlers="tests.e2e_handlers"))
    warned = [r for r in said(caplog) if r.getMessage().startswith("handlers registered")]
    assert [r.__dict__["sources"] for r in warned] == [["billing"]]


def test_no_handler_module_at_all_is_warned_about(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    run.import_handlers(make_settings())
    assert [r.getMessage() for r in said(caplog)] == [
        "WEBHOOK_HANDLERS is empty: every event will be settled as ignored"
    ]


def test_redis_failing_as_the_worker_registers_is_reported_and_the_worker_rebuilt(
    make_settings: Callable[..., Settings],
    redis_server: RedisServer,
    redis: Redis,
    make_proxy: Callable[[int], RedisProxy],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy = make_proxy(redis_server.port)
    settings = make_settings(redis_url=proxy.url, webhook_worker_mode="simple")
    proxy.drop_requests_with = b"birth"  # the worker's registration (RQ's `register_birth`)
    probes: list[float] = []

    def probe_sleep(seconds: float) -> None:
        probes.append(seconds)
        proxy.drop_requests_with = None  # Redis answers again

    monkeypatch.setattr(run, "time", SimpleNamespace(sleep=probe_sleep, monotonic=time.monotonic))
    caplog.set_level(logging.INFO, logger="webhooks")

    run.supervise(settings, burst=True, spans=NO_SPANS)

    messages = [r.getMessage() for r in said(caplog)]
    assert len([m for m in messages if m.startswith("redis unavailable")]) == 1
    assert messages.count("redis reachable again") == 1
    assert probes == [run.PROBE_EVERY]


# RQ's command listener (redis-py's pub/sub thread) may read its cut connection as it is
# stopped: its exception is the thread's, not the supervisor's.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_stop_while_redis_is_away_ends_the_supervisor_without_waiting_for_redis(
    make_settings: Callable[..., Settings],
    redis_server: RedisServer,
    redis: Redis,
    make_proxy: Callable[[int], RedisProxy],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy = make_proxy(redis_server.port)
    settings = make_settings(redis_url=proxy.url, webhook_worker_mode="simple")
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) > 3:  # it waits for Redis: end the test, not the wait
            raise SystemExit("waited for Redis after a stop")

    monkeypatch.setattr(run, "time", SimpleNamespace(sleep=sleep, monotonic=time.monotonic))

    built: list[WebhookWorker] = []

    def dequeue(self: WebhookWorker, timeout: int | None, max_idle_time: int | None = None) -> Any:
        built.append(self)
        self.stop_signalled = True  # SIGTERM...
        proxy.drop_requests_with = b"*"  # ...while Redis is away: every command cut
        raise StopRequested

    monkeypatch.setattr(WebhookWorker, "dequeue_job_and_maintain_ttl", dequeue)

    run.supervise(settings, burst=False, spans=NO_SPANS)
    built[0].pubsub_thread.join(10)  # its end is this test's, not a later one's

    # RQ's teardown failed to write to Redis; the supervisor left at once.
    assert sleeps == []
    assert not [r for r in said(caplog) if r.getMessage().startswith("redis unavailable")]
