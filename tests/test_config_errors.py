"""Every setting refuses a bad value the same way: one line, the variable's name, what was
expected, never the value (it may be a secret, or a URL holding one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.settings import ConfigError, Settings
from app.startup_checks import Process, check_startup
from tests.conftest import AUTH, SECRET, webhooks
from tests.processes import start
from workers.dev.redis_server import free_port

# One malformed value per variable, and what the message must say about it.
BAD_VALUES = {
    "REDIS_URL": ("redis://:hunter2-pass@localhost:63x79/0", "must be a number"),
    "WEBHOOK_SOURCES": ("inbound:nosuch", "unknown provider"),
    "WEBHOOK_SIGNING_SECRET": ("replace-me-with-a-long-random-string", "placeholder"),
    "WEBHOOK_DEDUPE_TTL": ("a-day", "valid integer"),
    "REPLAY_TOLERANCE": ("soon", "valid integer"),
    "WEBHOOK_MAX_BODY_BYTES": ("1MB", "valid integer"),
    "WEBHOOK_ACK_TIMEOUT": ("quickly", "valid number"),
    "WEBHOOK_MAX_HEADER_BYTES": ("100", "greater than or equal to 1024"),
    "WEBHOOK_MAX_HEADERS": ("many", "valid integer"),
    "WEBHOOK_HEADER_TIMEOUT": ("-5", "greater than 0"),
    "WEBHOOK_BODY_TIMEOUT": ("a while", "valid number"),
    "WEBHOOK_BODY_MIN_RATE": ("0", "greater than or equal to 1"),
    "WEBHOOK_MAX_CONNECTIONS": ("unlimited", "valid integer"),
    "WEBHOOK_QUEUE": ("web hooks", "pattern"),
    "WEBHOOK_KEY_PREFIX": ("a prefix", "pattern"),
    "WEBHOOK_MAX_RETRIES": ("1000", "less than or equal to 100"),
    "WEBHOOK_RETRY_INTERVALS": ("10,thirty", "valid integer"),
    "WEBHOOK_JOB_TIMEOUT": ("0", "greater than or equal to 1"),
    "WEBHOOK_MAINTENANCE_INTERVAL": ("often", "valid integer"),
    "WEBHOOK_WORKER_MODE": ("threads", "'fork' or 'simple'"),
    "WEBHOOK_REQUIRE_DURABLE_REDIS": ("perhaps", "valid boolean"),
    "WEBHOOK_LEDGER_TTL": ("5", "greater than or equal to 60"),
    "WEBHOOK_DEDUPE_MODE": ("off", "'enforce' or 'log-only'"),
    "WEBHOOK_LOG_FORMAT": ("fancy", "'auto', 'json' or 'text'"),
    "WEBHOOK_REPLAY_TOKEN": ("short-token-value", "at least 32"),
    "STRIPE_API_KEY": ("replace-me-stripe-key", "placeholder"),
    "GITHUB_TOKEN": ("replace-me-github-token", "placeholder"),
    "RQ_DASHBOARD_PASSWORD": ("replace-me-dashboard", "placeholder"),
    "WEBHOOK_SECRET_INBOUND": ("replace-me-inbound", "placeholder"),
    "REPLAY_TOLERANCE_INBOUND": ("later", "whole number"),
    "WEBHOOK_DEDUPE_TTL_INBOUND": ("0", "at least 1"),
    # Settings that other branches add (the batched worker, the new providers): checked
    # once those land, skipped before.
    "WEBHOOK_BATCH_SIZE": ("lots", "valid integer"),
    "WEBHOOK_FETCH_TIMEOUT": ("slow", "valid number"),
    "WEBHOOK_PUBLIC_URL": ("ftp://hooks.example", "pattern"),
    "REDIS_SENTINELS": ("s1:26x79", "must be a number"),
    "REDIS_SENTINEL_MASTER": ("my master", "pattern"),
    "REDIS_SENTINEL_PASSWORD": ("replace-me-sentinel", "placeholder"),
    "REDIS_CLUSTER_NODES": ("rediss://:hunter2-pass@n1:63x79,n2:6379", "must be a number"),
    "WEBHOOK_SHARDS": ("2000", "less than or equal to 1024"),
    "WEBHOOK_REPLICA_ACKS": ("many", "valid integer"),
    "WEBHOOK_REPLICA_ACK_TIMEOUT": ("soon", "valid number"),
    "WEBHOOK_REPLICA_ACK_MODE": ("fsync", "'wait' or 'waitaof'"),
    "OTEL_TRACES_EXPORTER": ("zipkin-exporter", "is not one of otlp, console, none"),
    "SENTRY_DSN": ("https://hunter2-key@o1.ingest.example/project", "must read http(s)://"),
    "WEBHOOK_SENTRY_EVENTS": ("every", "'attempt' or 'final'"),
    "WEBHOOK_SENTRY_SEND_PAYLOAD": ("perhaps", "valid boolean"),
    "SENTRY_ENVIRONMENT": ("prod east", "pattern"),
    "SENTRY_RELEASE": ("web/1.2", "pattern"),
    "WEBHOOK_EXPECTED_SILENCE": ("-60", "greater than or equal to 0"),
    "WEBHOOK_EXPECTED_SILENCE_INBOUND": ("a-day", "whole number"),
}
# Free text that any value satisfies, or checked where it is used (handlers on import).
UNCONSTRAINED = {
    "STRIPE_API_BASE",
    "GITHUB_API_BASE",
    "RQ_DASHBOARD_USERNAME",
    "WEBHOOK_HANDLERS",
    "WEBHOOK_FETCH_ALLOW",
    "REDIS_SENTINEL_USERNAME",
    "PER_SOURCE",
    "OTEL",  # the OTEL_* variables, gathered: OTEL_TRACES_EXPORTER is checked below
}
PER_SOURCE = (
    "WEBHOOK_SECRET_",
    "REPLAY_TOLERANCE_",
    "WEBHOOK_DEDUPE_TTL_",
    "WEBHOOK_EXPECTED_SILENCE_",
    "OTEL_",
)
VARIABLES = {name.upper() for name in Settings.model_fields}
CHECKED = sorted(v for v in BAD_VALUES if v in VARIABLES or v.startswith(PER_SOURCE))


def test_every_setting_has_a_malformed_value_checked_here() -> None:
    assert BAD_VALUES.keys() >= VARIABLES - UNCONSTRAINED


@pytest.mark.parametrize("variable", CHECKED)
def test_a_bad_value_is_one_line_naming_the_variable_and_never_the_value(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    value, expected = BAD_VALUES[variable]
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as error:
        # As the receiver starts: the settings' checks, then its own (the OTEL_* ones).
        check_startup(Settings.load(_env_file=None), Process.RECEIVER)
    message = str(error.value)
    assert "\n" not in message
    assert variable in message and expected in message, message
    if variable != "WEBHOOK_SOURCES":  # naming the unknown provider is the help there
        assert value not in message
    assert "hunter2" not in message


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:99999/0",
        "http://localhost:6379/0",
        "localhost:6379",
        "redis://localhost:6379/zero",
        "redis://localhost:6379/0?socket_timeout=soon",
    ],
)
def test_each_kind_of_malformed_redis_url_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match=r"^REDIS_URL: (the (port|scheme|database) |unknown)"):
        Settings.load(_env_file=None, webhook_signing_secret=SECRET, redis_url=url)


@pytest.mark.parametrize(
    "url", ["redis://localhost:6379/0", "rediss://:p@cache.example:6380/2", "unix:///run/r.sock"]
)
def test_well_formed_redis_urls_are_kept(url: str) -> None:
    settings = Settings.load(_env_file=None, webhook_signing_secret=SECRET, redis_url=url)
    assert settings.redis_url == url


def test_inbound_alone_means_the_default_hmac_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET_STRIPE", "whsec_real-secret-0123")
    settings = Settings.load(
        _env_file=None, webhook_signing_secret=SECRET, webhook_sources="inbound,stripe"
    )
    assert {n: s.provider for n, s in settings.sources.items()} == {
        "inbound": "hmac",
        "stripe": "stripe",
    }


def test_the_command_reports_a_malformed_redis_url_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("REDIS_URL", "redis://:hunter2-pass@localhost:63x79/0")
    result = webhooks("dead", "list")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: REDIS_URL: the port of localhost must be a number"
    ]


# Each malformed REDIS_URL a process must refuse in one line, and what that line says.
MALFORMED_REDIS_URLS = {
    "redis://:hunter2-pass@127.0.0.1:63x79/0": "REDIS_URL: the port of 127.0.0.1 must be a number",
    # urllib's own error, a traceback before (`ValueError: Invalid IPv6 URL`).
    "redis://:hunter2-pass@[::1/0": "REDIS_URL does not parse: an IPv6 host is written in",
}


@pytest.mark.parametrize("url", MALFORMED_REDIS_URLS)
@pytest.mark.parametrize("name", ["web", "worker", "dashboard"])
def test_every_process_refuses_a_malformed_redis_url_in_one_line(
    tmp_path: Path, name: str, url: str
) -> None:
    env = {
        "PORT": str(free_port()),
        "REDIS_URL": url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "RQ_DASHBOARD_USERNAME": AUTH[0],
        "RQ_DASHBOARD_PASSWORD": AUTH[1],
    }
    process = start(name, env, tmp_path)
    try:
        assert process.popen.wait(30) != 0
    finally:
        process.stop()
    output = process.output()
    refusal = MALFORMED_REDIS_URLS[url]
    assert [line for line in output.splitlines() if refusal in line], output
    assert "Traceback" not in output and "hunter2" not in output


def test_make_run_refuses_an_unclosed_bracket_in_redis_url_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "Procfile").write_text("web: true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBHOOK_", "REDIS_"))}
    env["REDIS_URL"] = "redis://:hunter2-pass@[::1/0"
    webhooks_command = Path(sys.executable).parent / "webhooks"
    ran = subprocess.run(
        [str(webhooks_command), "dev"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode != 0
    assert (ran.stdout + ran.stderr).splitlines() == [
        "Error: REDIS_URL does not parse: an IPv6 host is written in brackets, both of them, "
        "as in redis://[::1]:6379/0"
    ]
