"""Tracing's switch: off unless OTEL_TRACES_EXPORTER asks, and then nothing of it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import app
from app.settings import ConfigError, Settings
from app.tracing import NO_TRACING, receiver_tracing, tracing_wanted
from tests.conftest import SECRET
from tests.processes import ROOT
from workers.dev.redis_server import RedisServer

# A delivery through the receiver, then a drain by the worker in each mode, in a fresh
# interpreter with no OTEL_* variable. Installed, OpenTelemetry's metrics API is loaded by
# redis-py's own import (its observability module); nothing more may be loaded after that:
# not by a request, not by a job (its handler looks, in the child of the fork mode too).
_UNTRACED = textwrap.dedent(
    """
    import json, os, sys
    from redis import Redis
    from starlette.testclient import TestClient
    from app.main import create_app
    from app.settings import Settings
    from tests.conftest import event_body, sign
    from workers import Event, handler
    from workers.runtime.run import build_worker

    def loaded():
        return sorted(m for m in sys.modules if m.startswith(("opentelemetry", "app.otel_setup",
            "app.delivery_trace", "workers.runtime.otel_spans")))

    redis = Redis.from_url(os.environ["REDIS_URL"])

    @handler("inbound", "order.created")
    def look(event: Event) -> None:
        redis.set("loaded:" + event.id, json.dumps(loaded()))

    at_start = loaded()
    for mode in ("fork", "simple"):
        settings = Settings.load(webhook_worker_mode=mode, webhook_key_prefix="off-" + mode)
        with TestClient(create_app(settings)) as client:
            body = event_body("evt_off_" + mode)
            answer = client.post(
                "/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)}
            )
            assert answer.json()["status"] == "accepted", answer.text
        assert loaded() == at_start, "a request loaded " + str(set(loaded()) - set(at_start))
        build_worker(settings, redis).work(burst=True, with_scheduler=False)
        in_job = json.loads(redis.get("loaded:evt_off_" + mode))
        assert in_job == at_start, "a job loaded " + str(set(in_job) - set(at_start))
        assert loaded() == at_start, "a batch loaded " + str(set(loaded()) - set(at_start))
    print(json.dumps(at_start))
    """
)


def test_with_no_otel_variable_nothing_of_opentelemetry_is_imported(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    env = {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "REDIS_URL": redis_server.url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_QUEUE": "tracing-off",
    }
    ran = subprocess.run(
        [sys.executable, "-c", _UNTRACED],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    at_start = json.loads(ran.stdout.strip().splitlines()[-1])
    # Ours, the tracing SDK, the exporters and the instrumentations: none of it.
    assert not [m for m in at_start if not m.startswith("opentelemetry")]
    assert not [
        m
        for m in at_start
        if m.startswith(("opentelemetry.sdk.trace", "opentelemetry.exporter", "opentelemetry.inst"))
    ]


@pytest.mark.parametrize(
    ("otel", "wanted"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": " "}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_tracing_is_on_only_when_an_exporter_is_named(otel: dict[str, str], wanted: bool) -> None:
    assert tracing_wanted(otel) is wanted


def test_an_exporter_we_cannot_export_to_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="OTEL_TRACES_EXPORTER: an exporter is not one of"):
        tracing_wanted({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_tracing_asked_for_without_the_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if the extra were missing, whatever this process imported before: `from app import
    # otel_setup` finds the package's attribute first, then sys.modules.
    monkeypatch.delattr(app, "otel_setup", raising=False)
    monkeypatch.setitem(sys.modules, "app.otel_setup", None)
    with pytest.raises(ConfigError, match=r"pip install 'rq-webhook-receiver\[otel\]'"):
        receiver_tracing({"OTEL_TRACES_EXPORTER": "otlp"})


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]
)
def test_a_grpc_exporter_is_refused_by_name(variable: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}: 'grpc' is not supported"):
        receiver_tracing({"OTEL_TRACES_EXPORTER": "otlp", variable: "grpc"})


def test_the_otel_variables_of_the_env_file_count(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "WEBHOOK_SIGNING_SECRET=a-test-secret-that-is-long-enough\n"
        "OTEL_TRACES_EXPORTER=otlp\nOTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer t0ken\n"
    )
    settings = Settings.load(_env_file=str(env_file))
    assert settings.otel["OTEL_TRACES_EXPORTER"] == "otlp"
    assert "t0ken" not in repr(settings)


def test_without_otel_variables_the_receiver_traces_nothing() -> None:
    assert receiver_tracing({}) is NO_TRACING
