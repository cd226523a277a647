"""`webhooks replay` never prints a configured secret, whatever a provider's API answers:
an error that quotes the key it refused, or any other secret of ours; a message long enough
to cut a key in two; an answer of a shape the command cannot read."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.conftest import SECRET, webhooks
from tests.fake_apis import FakeApi
from tests.replay_apis import NOW, api, env, waits
from workers.dev.redis_server import RedisServer

__all__ = ["api", "env", "waits"]  # fixtures

MARKER = "[redacted]"
GITHUB = ("--repo", "o/r", "--hook-id", "42")


def replay(provider: str, *extra: str) -> Result:
    args = ["replay", provider, "--since", str(NOW - 3600), *extra]
    return webhooks(*args, *(GITHUB if provider == "github" else ()))


def assert_hidden(result: Result, secret: str) -> None:
    """Neither stream holds the secret, nor any 8 characters of it in a row."""
    pieces = {secret[i : i + 8] for i in range(max(1, len(secret) - 7))}
    for stream in (result.stdout, result.stderr):
        assert not [piece for piece in pieces if piece in stream], stream


@pytest.mark.parametrize(
    ("provider", "variable"), [("stripe", "STRIPE_API_KEY"), ("github", "GITHUB_TOKEN")]
)
def test_an_api_that_quotes_the_key_it_refused_gets_the_marker_printed_not_the_key(
    env: None, api: FakeApi, monkeypatch: pytest.MonkeyPatch, provider: str, variable: str
) -> None:
    key = f"{provider}-live-key-that-the-api-refused-0123456789"
    monkeypatch.setenv(variable, key)
    api.echo_credentials = True
    result = replay(provider)
    assert result.exit_code == 1
    assert "answered 401" in result.stderr and MARKER in result.stderr
    assert_hidden(result, key)


# Every kind of secret the command can know, as its variable holds it and as an API might
# quote it (one of a rotated pair; a secret of a source no longer listed).
SECRETS = [
    ("STRIPE_API_KEY", "sk_test_the-key-the-api-accepted-0001", None),
    ("GITHUB_TOKEN", "ghp_token-of-the-other-provider-0002", None),
    ("WEBHOOK_SECRET_STRIPE", "whsec_signing-secret-of-stripe-0003", None),
    (
        "WEBHOOK_SECRET_GITHUB",
        "old-github-secret-0004, new-github-secret-0005",
        "new-github-secret-0005",
    ),
    ("WEBHOOK_SECRET_RETIRED", "secret-of-a-source-not-listed-0006", None),
    ("WEBHOOK_SIGNING_SECRET", SECRET, None),
    ("RQ_DASHBOARD_PASSWORD", "dashboard-password-0007", None),
    ("WEBHOOK_REPLAY_TOKEN", "replay-token-0123456789abcdef-0008", None),
    ("REDIS_SENTINEL_PASSWORD", "sentinel-password-0009", None),
]


@pytest.mark.parametrize(("variable", "value", "quoted"), SECRETS)
def test_an_api_error_quoting_any_configured_secret_gets_the_marker_printed_instead(
    env: None,
    api: FakeApi,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    quoted: str | None,
) -> None:
    monkeypatch.setenv(variable, value)
    if variable == "STRIPE_API_KEY":
        api.key = value
    secret = quoted or value
    api.error = (400, {"error": {"message": f"No such customer: '{secret}'"}})
    result = replay("stripe")
    assert result.exit_code == 1
    assert f"No such customer: '{MARKER}'" in result.stderr
    assert_hidden(result, secret)


def test_an_api_error_quoting_the_redis_password_gets_the_marker_printed_instead(
    env: None,
    api: FakeApi,
    monkeypatch: pytest.MonkeyPatch,
    make_redis: Callable[..., RedisServer],
) -> None:
    server = make_redis(options={"requirepass": "redis-password-0010"})
    monkeypatch.setenv("REDIS_URL", server.url)
    api.error = (400, {"message": "unexpected redis-password-0010"})
    result = replay("github")
    assert result.exit_code == 1 and f"unexpected {MARKER}" in result.stderr
    assert_hidden(result, "redis-password-0010")


def test_a_key_at_the_cut_of_a_long_message_is_not_printed_in_part(
    env: None, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The message is shortened for the terminal: cut before the key was hidden, its first
    # characters would be printed.
    key = "sk_live_51HalfAKeyIsStillAKey0123456789abcdef"
    monkeypatch.setenv("STRIPE_API_KEY", key)
    api.error = (400, {"error": {"message": "x" * 180 + key + " was not accepted"}})
    result = replay("stripe")
    assert result.exit_code == 1 and "answered 400" in result.stderr
    assert_hidden(result, key)


def test_an_answer_the_command_cannot_read_is_one_line_without_the_secret_it_quotes(
    env: None, api: FakeApi, tmp_path: Path
) -> None:
    # A deliveries page whose time quotes the token: reading it fails inside the command.
    # Run as the operator runs it, so an uncaught traceback would show.
    api.deliveries = [
        {"id": 1, "guid": "g", "delivered_at": f"soon, {api.key}!", "status_code": 500}
    ]
    done = subprocess.run(
        [sys.executable, "-m", "workers", "replay", "github", "--since", "0", *GITHUB],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert MARKER in done.stderr and len(done.stderr.strip().splitlines()) == 2  # redis:, error
    for stream in (done.stdout, done.stderr):
        assert api.key not in stream
