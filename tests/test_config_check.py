"""`webhooks config check`: every setting, where it came from, secrets masked, and every
problem the startup checks find, listed at once with a non-zero exit."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from app.settings import Settings
from tests.conftest import SECRET, webhooks
from workers.dev.stackfile import StackFile

LOGIN = "RQ_DASHBOARD_USERNAME=ops\nRQ_DASHBOARD_PASSWORD=a-long-dashboard-password\n"
STRIPE_SECRETS = "whsec_0ld0ld0ld0ld0ld0ld0ld0ld0ld,whsec_n3wn3wn3wn3wn3wn3wn3wn3w"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """A checkout (its Procfile ends the search for a stack) with this `.env`; the command
    runs in it."""

    def make(dotenv: str = "") -> Path:
        (tmp_path / "Procfile").write_text("web: true\n")
        (tmp_path / ".env").write_text(dotenv)
        monkeypatch.chdir(tmp_path)
        return tmp_path

    return make


def _rows(output: str) -> dict[str, tuple[str, str]]:
    """SETTING -> (FROM, VALUE) from the table."""
    lines = output.splitlines()
    header = lines[0]
    origin_at, value_at = header.index("FROM"), header.index("VALUE")
    rows = {}
    for line in lines[1:]:
        if not line.startswith(
            ("WEBHOOK_", "REDIS_", "REPLAY_", "STRIPE_", "GITHUB_", "RQ_", "OTEL_", "SENTRY_")
        ):
            break
        rows[line.split()[0]] = (line[origin_at:value_at].strip(), line[value_at:].strip())
    return rows


def test_every_setting_is_listed_with_where_it_came_from(
    checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout(f"WEBHOOK_KEY_PREFIX=staging\nWEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}")
    monkeypatch.setenv("WEBHOOK_QUEUE", "from-the-shell")
    result = webhooks("config", "check")
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert {name.upper() for name in Settings.model_fields} - {"PER_SOURCE", "OTEL"} <= set(rows)
    assert rows["WEBHOOK_QUEUE"] == ("environment", "from-the-shell")
    assert rows["WEBHOOK_KEY_PREFIX"] == (".env", "staging")
    assert rows["REPLAY_TOLERANCE"] == ("default", "300")
    assert "ok: the checks every process makes at startup pass" in result.stdout
    assert not [name for name in rows if name.startswith("OTEL")]


def test_the_tracing_variables_set_are_listed_and_a_collector_token_masked(
    checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout(
        f"WEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}OTEL_TRACES_EXPORTER=otlp\n"
        "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20s3cr3t-t0ken\n"
    )
    monkeypatch.setenv("OTEL_SERVICE_NAME", "hooks-eu")
    result = webhooks("config", "check")
    rows = _rows(result.stdout)
    assert rows["OTEL_TRACES_EXPORTER"] == (".env", "otlp")
    assert rows["OTEL_SERVICE_NAME"] == ("environment", "hooks-eu")
    assert rows["OTEL_EXPORTER_OTLP_HEADERS"][1].startswith("****")
    assert "s3cr3t-t0ken" not in result.output


def test_per_source_variables_are_listed_and_a_missing_secret_is_shown_unset(
    checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout("WEBHOOK_SOURCES=inbound:hmac,stripe\nREPLAY_TOLERANCE_STRIPE=600\n")
    monkeypatch.setenv("WEBHOOK_SECRET_INBOUND", SECRET)
    rows = _rows(webhooks("config", "check").stdout)
    assert rows["REPLAY_TOLERANCE_STRIPE"] == (".env", "600")
    assert rows["WEBHOOK_SECRET_INBOUND"] == ("environment", "********")
    assert rows["WEBHOOK_SECRET_STRIPE"] == ("default", "(not set)")


def test_secrets_and_passwords_in_urls_are_masked(
    checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_SECRET_STRIPE": STRIPE_SECRETS,
        "RQ_DASHBOARD_PASSWORD": "dashboard-password-in-env",
        "STRIPE_API_KEY": "rk_live_abcdefghijklmnop",
        "REDIS_URL": "redis://webhooks:redis-hunter2@127.0.0.1:1/0",
        "GITHUB_API_BASE": "https://bot:gh-pass-word@github.example.com",
        "SENTRY_DSN": "https://sentry-k3y-0123@o1.ingest.example/7",
    }
    checkout("".join(f"{k}={v}\n" for k, v in secrets.items()))
    monkeypatch.setenv("WEBHOOK_SOURCES", "inbound:hmac,stripe")
    text = webhooks("config", "check")
    as_json = webhooks("config", "check", "--json")
    for output in (text.output, as_json.output):
        for leaked in (SECRET, "whsec_0ld", "whsec_n3w", "dashboard-password-in-env",
                       "rk_live_abc", "redis-hunter2", "gh-pass-word", "sentry-k3y"):  # fmt: skip
            assert leaked not in output
    rows = _rows(text.stdout)
    assert rows["REDIS_URL"] == (".env", "redis://webhooks:********@127.0.0.1:1/0")
    assert rows["WEBHOOK_SECRET_STRIPE"] == (".env", "******** (2 secrets)")
    assert rows["RQ_DASHBOARD_PASSWORD"] == (".env", "********")
    assert rows["SENTRY_DSN"] == (".env", "********")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # redis-py reads the password up to the last @: all of it is masked.
        ("redis://:p@ss-word@redis.example:6379/0", "redis://:********@redis.example:6379/0"),
        (
            "rediss://h:6380/0?ssl_keyfile=/k.pem&ssl_password=KeyPassphrase123",
            "rediss://h:6380/0?ssl_keyfile=/k.pem&ssl_password=********",
        ),
        ("redis://h:6379/0?password=in-the-query", "redis://h:6379/0?password=********"),
    ],
)
def test_a_password_anywhere_in_redis_url_is_masked(
    checkout: Callable[..., Path], url: str, shown: str
) -> None:
    checkout(f"REDIS_URL={url}\nWEBHOOK_SIGNING_SECRET={SECRET}\n")
    text = webhooks("config", "check")
    assert _rows(text.stdout)["REDIS_URL"] == (".env", shown)
    assert not [
        part for part in ("ss-word", "KeyPassphrase123", "in-the-query") if part in text.output
    ]


# Each holds a marker that must appear nowhere in the command's output, text or JSON.
COLLECTOR_SECRETS = {
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20all-signals-m4rker",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-honeycomb-team=traces-m4rker",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "authorization=Bearer%20metrics-m4rker",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "api-key=logs-m4rker",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example/v1?api-key=endpoint-m4rker&region=eu",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://otlp.example/t?access_token=token-m4rker",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://otlp.example/l?X-Amz-Signature=sig-m4rker",
    "GITHUB_API_BASE": "https://github.example/api?apikey=apikey-m4rker&sig=short-m4rker",
    "STRIPE_API_BASE": "https://stripe.example/?auth=auth-m4rker;token=semicolon-m4rker",
}


def test_collector_headers_and_credentials_in_a_urls_query_are_masked(
    checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout(f"WEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}OTEL_TRACES_EXPORTER=otlp\n")
    for name, value in COLLECTOR_SECRETS.items():
        monkeypatch.setenv(name, value)
    text = webhooks("config", "check")
    as_json = webhooks("config", "check", "--json")
    for result in (text, as_json):
        leaked = [m for m in ("m4rker",) if m in result.stdout + result.stderr]
        assert not leaked, result.output
    rows = _rows(text.stdout)
    for name in COLLECTOR_SECRETS:
        if "HEADERS" in name:
            assert rows[name] == ("environment", "********")
    # The option's name stays, and what is no credential: the reader sees which it is.
    assert rows["OTEL_EXPORTER_OTLP_ENDPOINT"] == (
        "environment",
        "https://otlp.example/v1?api-key=********&region=eu",
    )
    shown = {s["name"]: s["value"] for s in json.loads(as_json.stdout)["settings"]}
    assert shown["OTEL_EXPORTER_OTLP_LOGS_HEADERS"] == "********"
    assert shown["GITHUB_API_BASE"] == "https://github.example/api?apikey=********&sig=********"


def test_an_unclosed_bracket_in_redis_url_is_one_line_without_the_password(
    checkout: Callable[..., Path],
) -> None:
    checkout(f"REDIS_URL=redis://:pw-m4rker@[::1/0\nWEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}")
    text = webhooks("config", "check")
    as_json = webhooks("config", "check", "--json")
    for result in (text, as_json):
        assert result.exit_code == 1
        assert "Traceback" not in result.output and "m4rker" not in result.output
    assert text.stderr.splitlines() == [
        "1 problem found by the checks every process makes at startup:",
        "  REDIS_URL does not parse: an IPv6 host is written in brackets, both of them, as "
        "in redis://[::1]:6379/0",
    ]
    assert [p for p in json.loads(as_json.stdout)["problems"] if "REDIS_URL" in p] == [
        "REDIS_URL does not parse: an IPv6 host is written in brackets, both of them, as "
        "in redis://[::1]:6379/0"
    ]


def test_every_problem_is_listed_at_once_with_a_non_zero_exit(
    checkout: Callable[..., Path],
) -> None:
    checkout(
        "WEBHOOK_SOURCES=inbound:hmac,stripe,github\n"
        "WEBHOOK_SIGNING_SECRET=replace-me-with-a-long-random-string\n"
        "WEBHOOK_SECRET_STRIPE=whsec_...\n"
        "RQ_DASHBOARD_PASSWORD=replace-me\n"
        "WEBHOOK_REPLAY_TOKEN=too-short\n"
    )
    result = webhooks("config", "check")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "4 problems found by the checks every process makes at startup:",
        "  WEBHOOK_SECRET_STRIPE, WEBHOOK_SIGNING_SECRET and RQ_DASHBOARD_PASSWORD are still "
        "the placeholders from .env.example: set real secrets",
        "  WEBHOOK_SECRET_GITHUB is not set: source 'github' cannot verify signatures without "
        "a secret",
        "  WEBHOOK_REPLAY_TOKEN must be at least 32 characters (it lets its holder enqueue "
        "unsigned events); leave it empty to disable replay",
        "  RQ_DASHBOARD_USERNAME and RQ_DASHBOARD_PASSWORD must be set: the dashboard can "
        "requeue and delete events, so it never runs without a login",
    ]


def test_json_output_is_one_object_with_the_settings_and_the_problems(
    checkout: Callable[..., Path],
) -> None:
    checkout(f"WEBHOOK_DEDUPE_TTL=soon-ish\nWEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}")
    result = webhooks("config", "check", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert report["problems"] == [
        "WEBHOOK_DEDUPE_TTL: Input should be a valid integer, unable to parse string as an integer"
    ]
    settings = {s["name"]: s for s in report["settings"]}
    assert settings["WEBHOOK_DEDUPE_TTL"] == {
        "name": "WEBHOOK_DEDUPE_TTL",
        "value": "soon-ish",
        "from": ".env",
    }


def test_values_are_escaped_for_the_terminal(checkout: Callable[..., Path]) -> None:
    # A title-setting escape sequence where a queue name should be.
    checkout("WEBHOOK_QUEUE=q\x1b]0;owned\x07\nWEBHOOK_SIGNING_SECRET=" + SECRET + "\n")
    result = webhooks("config", "check")
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert result.exit_code == 1
    assert "WEBHOOK_QUEUE: String should match pattern" in result.stderr


def test_a_running_stacks_values_are_attributed_to_make_run(
    checkout: Callable[..., Path], stand_in: subprocess.Popen[bytes]
) -> None:
    root = checkout("WEBHOOK_KEY_PREFIX=mine\n")
    (root / "var").mkdir()
    (root / "var" / "dev.env").write_text(f"WEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}")
    redis_url = "redis://127.0.0.1:6390/0"
    StackFile(stand_in.pid, redis_url, {"WEBHOOK_RETRY_INTERVALS": "1,2,5,10,20"}).write(root)
    result = webhooks("config", "check")
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert rows["REDIS_URL"] == ("var/stack.json (make run)", redis_url)
    assert rows["WEBHOOK_RETRY_INTERVALS"] == ("var/stack.json (make run)", "1,2,5,10,20")
    assert rows["WEBHOOK_SIGNING_SECRET"] == ("var/dev.env (make run)", "********")
    assert "WEBHOOK_SECRET_INBOUND" not in rows  # given as WEBHOOK_SIGNING_SECRET: not missing
    assert rows["WEBHOOK_KEY_PREFIX"] == (".env", "mine")
    assert "redis: the `make run` stack of this checkout, var/stack.json" in result.stdout


def test_a_dashboard_login_the_dashboard_would_refuse_is_a_problem(
    checkout: Callable[..., Path],
) -> None:
    checkout(
        f"WEBHOOK_SIGNING_SECRET={SECRET}\n"
        "RQ_DASHBOARD_USERNAME=ops\nRQ_DASHBOARD_PASSWORD=short-but-real\n"
    )
    result = webhooks("config", "check")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1:] == [
        "  RQ_DASHBOARD_PASSWORD must be at least 16 characters (e.g. `openssl rand -base64 "
        "24`): the dashboard can requeue and delete events"
    ]


def test_with_the_stack_stopped_no_redis_is_said_to_be_configured(
    checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = checkout(f"WEBHOOK_SIGNING_SECRET={SECRET}\n{LOGIN}")
    (root / "var" / "redis").mkdir(parents=True)  # what a cleanly stopped stack leaves
    monkeypatch.delenv("REDIS_URL", raising=False)
    result = webhooks("config", "check")
    assert result.exit_code == 0, result.output
    assert _rows(result.stdout)["REDIS_URL"] == (
        "default",
        "(none: REDIS_URL is not set and `make run`'s stack is down)",
    )
    assert "redis: none: the `make run` stack of this checkout is not running" in result.stdout
    assert result.stdout.splitlines()[-1] == (
        "ok: the checks every process makes at startup pass, but no Redis is configured: "
        "REDIS_URL is not set and the `make run` stack of this checkout is down; start it "
        "with `make run`, or set REDIS_URL=redis://HOST:PORT/DB"
    )
    assert "redis://localhost:6379" not in result.output
