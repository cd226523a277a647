"""Which Redis the `webhooks` command talks to: REDIS_URL, else this checkout's `make run`
stack (var/stack.json), else the default, with an error that says how to point it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from redis import Redis

from app.settings import Settings
from tests.conftest import SECRET, webhooks
from workers.dev.redis_server import RedisServer, free_port
from workers.dev.stack import _processes_settings
from workers.dev.stackfile import (
    StackFile,
    remove_stack_file,
    stack_secrets,
    write_stack_secrets,
)
from workers.ops.common import CommandError, redis_connection
from workers.ops.target import Target, resolve_target


@pytest.fixture
def make_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """A checkout (a Procfile) whose `make run` stack file points at a Redis; the test runs
    in it, with nothing configured."""

    def make(redis_url: str, pid: int, settings: dict[str, str] | None = None) -> Path:
        root = tmp_path / "checkout"
        (root / "var").mkdir(parents=True)
        (root / "Procfile").write_text("web: true\n")
        (root / "var" / "dev.env").write_text(
            f"WEBHOOK_SIGNING_SECRET={SECRET}\nRQ_DASHBOARD_PASSWORD=dev-password-123\n"
        )
        StackFile(pid, redis_url, settings or {}).write(root)
        monkeypatch.chdir(root)
        return root

    return make


def test_without_redis_url_the_command_uses_the_running_stack_and_says_so(
    make_checkout: Callable[..., Path],
    stand_in: subprocess.Popen[bytes],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    make_checkout(redis_server.url, stand_in.pid)
    result = webhooks("dead", "list")
    assert result.exit_code == 0, result.output
    assert result.stdout == "0 dead letters\n"
    assert result.stderr == (
        f"redis: 127.0.0.1:{redis_server.port}/0 "
        "(the `make run` stack of this checkout, var/stack.json)\n"
    )


def test_the_stack_is_found_from_a_subdirectory_of_the_checkout(
    make_checkout: Callable[..., Path],
    stand_in: subprocess.Popen[bytes],
    redis_server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_checkout(redis_server.url, stand_in.pid)
    (root / "examples").mkdir()
    monkeypatch.chdir(root / "examples")
    target = resolve_target()
    assert (target.origin, target.overrides.get("redis_url")) == ("stack", redis_server.url), target


def test_the_stack_brings_its_settings_and_credentials_but_configuration_wins(
    make_checkout: Callable[..., Path],
    stand_in: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_checkout("redis://127.0.0.1:7000/0", stand_in.pid, {"WEBHOOK_RETRY_INTERVALS": "1,2,5"})
    monkeypatch.setenv("RQ_DASHBOARD_PASSWORD", "mine-not-the-stacks")
    target = resolve_target()
    assert target.overrides == {
        "redis_url": "redis://127.0.0.1:7000/0",
        "webhook_retry_intervals": "1,2,5",
        "webhook_signing_secret": SECRET,
    }
    settings = Settings.load(**target.overrides)
    assert settings.webhook_retry_intervals == [1, 2, 5]
    assert settings.rq_dashboard_password is not None
    assert settings.rq_dashboard_password.get_secret_value() == "mine-not-the-stacks"


def test_redis_url_wins_over_a_running_stack(
    make_checkout: Callable[..., Path],
    stand_in: subprocess.Popen[bytes],
    redis_server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_checkout("redis://127.0.0.1:1/0", stand_in.pid)
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    result = webhooks("events", "list")
    assert result.exit_code == 0, result.output
    assert result.stderr == f"redis: 127.0.0.1:{redis_server.port}/0 (REDIS_URL)\n"


@pytest.fixture
def no_redis_dialled(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every Redis the command would connect to (none, for a checkout whose stack is down)."""
    dialled: list[object] = []

    def dial(settings: Settings, *args: object) -> Redis:
        dialled.append(settings.redis_url)
        raise AssertionError("the command connected to a Redis")

    monkeypatch.setattr("workers.ops.common.sync_client", dial)
    return dialled


@pytest.fixture
def killed_stack(
    make_checkout: Callable[..., Path], redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A checkout whose stack was killed: its stack file names a `webhooks dev` long gone.
    The secret is set (as a `.env` would): only the Redis is missing."""
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    gone = subprocess.Popen([sys.executable, "-c", "pass", "webhooks"])
    gone.wait()
    return make_checkout(redis_server.url, gone.pid)


@pytest.fixture
def stopped_stack(make_checkout: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout whose stack stopped cleanly: no stack file, its Redis data in var/redis."""
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    root = make_checkout("redis://127.0.0.1:1/0", 1)
    (root / "var" / "stack.json").unlink()
    (root / "var" / "redis").mkdir()
    return root


@pytest.mark.parametrize("command", [["dead", "list"], ["events", "list"]], ids=" ".join)
def test_a_killed_stack_is_said_and_no_other_redis_is_read(
    killed_stack: Path, no_redis_dialled: list[object], command: list[str]
) -> None:
    result = webhooks(*command)
    assert result.exit_code == 1 and result.stdout == "", result.output
    message = result.stderr.strip()
    assert "\n" not in message and no_redis_dialled == []
    assert "the `make run` stack of this checkout is not running" in message
    assert "var/stack.json is left from a stack that no longer runs" in message
    assert "start the stack with `make run`, or set REDIS_URL=" in message


def test_a_cleanly_stopped_stack_is_said_and_no_other_redis_is_read(
    stopped_stack: Path, no_redis_dialled: list[object]
) -> None:
    result = webhooks("dead", "list")
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert no_redis_dialled == []
    assert "the `make run` stack of this checkout is not running" in result.stderr
    assert "its data is in var/redis" in result.stderr


@pytest.mark.parametrize("checkout", ["killed_stack", "stopped_stack"])
def test_redis_url_is_used_when_the_checkouts_stack_is_down(
    checkout: str,
    request: pytest.FixtureRequest,
    redis_server: RedisServer,
    redis: Redis,  # emptied: the server is the session's, and other tests leave dead letters
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request.getfixturevalue(checkout)
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    result = webhooks("dead", "list")
    assert result.exit_code == 0, result.output
    assert result.stdout == "0 dead letters\n"
    assert result.stderr == f"redis: 127.0.0.1:{redis_server.port}/0 (REDIS_URL)\n"


def test_a_stack_whose_redis_does_not_answer_is_said_and_no_other_redis_is_read(
    make_checkout: Callable[..., Path], stand_in: subprocess.Popen[bytes]
) -> None:
    make_checkout(f"redis://127.0.0.1:{free_port()}/0", stand_in.pid)
    result = webhooks("dead", "list")
    assert result.exit_code == 1 and result.stdout == "", result.output
    message = result.stderr.splitlines()[-1]
    assert message.startswith("Error: cannot reach Redis at 127.0.0.1:")
    assert "is `make run` still running? Start it with `make run`, or set REDIS_URL=" in message


def test_a_checkout_where_no_stack_ever_ran_uses_the_default(
    make_checkout: Callable[..., Path],
) -> None:
    root = make_checkout("redis://127.0.0.1:1/0", 1)
    (root / "var" / "stack.json").unlink()
    assert resolve_target().origin == "default"


def test_with_no_stack_and_nothing_configured_the_error_says_how_to_point_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = webhooks("dead", "list")
    assert result.exit_code == 1
    message = result.output.strip()
    assert "\n" not in message
    assert "WEBHOOK_SECRET_INBOUND (or WEBHOOK_SIGNING_SECRET) is not set" in message
    assert "no `make run` stack of this checkout is up: start one with `make run`" in message
    assert "set REDIS_URL=redis://HOST:PORT/DB" in message


@pytest.mark.parametrize(
    ("target", "advice"),
    [
        (Target("default"), "start one with `make run`, or set REDIS_URL="),
        (Target("stack", stack_file=Path("var/stack.json")), "is `make run` still running?"),
        (Target("REDIS_URL"), "check REDIS_URL"),
    ],
    ids=["default", "stack", "REDIS_URL"],
)
def test_an_unreachable_redis_is_one_line_with_what_to_do(
    make_settings: Callable[..., Settings], target: Target, advice: str
) -> None:
    settings = make_settings(redis_url=f"redis://:hunter2@127.0.0.1:{free_port()}/0")
    with click.Context(click.Command("test")) as context:
        context.meta["webhooks.target"] = target
        with pytest.raises(CommandError) as error, redis_connection(settings) as connection:
            connection.ping()
    message = error.value.format_message()
    assert message.startswith("cannot reach Redis at 127.0.0.1:") and advice in message
    assert "hunter2" not in message and "\n" not in message


def test_what_make_runs_command_line_set_reaches_the_command_over_dotenv(
    make_checkout: Callable[..., Path], stand_in: subprocess.Popen[bytes]
) -> None:
    """`WEBHOOK_SOURCES=inbound,stripe make run` with `.env` saying `inbound`: the stack's
    processes serve both, and so does the command of a second terminal."""
    root = make_checkout("redis://127.0.0.1:7000/0", stand_in.pid)
    (root / ".env").write_text("WEBHOOK_SOURCES=inbound\nWEBHOOK_QUEUE=from-dotenv\n")
    stack = StackFile.read(root / "var" / "stack.json")
    assert stack is not None
    environment = {"WEBHOOK_SOURCES": "inbound,stripe", "WEBHOOK_QUEUE": "from-dotenv"}
    StackFile(stack.pid, stack.redis_url, environment=environment).write(root)
    write_stack_secrets({"WEBHOOK_SECRET_STRIPE": "whsec_from_the_command_line"}, root)
    settings = Settings.load(**resolve_target().overrides)
    assert list(settings.sources) == ["inbound", "stripe"]
    assert settings.sources["stripe"].secrets[0].get_secret_value() == "whsec_from_the_command_line"


def test_the_second_terminals_own_environment_wins_over_the_stack(
    make_checkout: Callable[..., Path],
    stand_in: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_checkout("redis://127.0.0.1:7000/0", stand_in.pid)
    StackFile(stand_in.pid, "", environment={"WEBHOOK_QUEUE": "the-stacks"}).write(root)
    monkeypatch.setenv("WEBHOOK_QUEUE", "mine")
    assert "webhook_queue" not in resolve_target().overrides


def test_the_stack_file_holds_no_secret_and_its_secrets_file_is_the_owners_alone(
    tmp_path: Path,
) -> None:
    shown, hidden = _processes_settings(
        {
            "WEBHOOK_SOURCES": "inbound,stripe",
            "WEBHOOK_SECRET_STRIPE": "whsec_given",
            "WEBHOOK_SIGNING_SECRET": "made-by-make-run",
            "REDIS_URL": "redis://:pw@127.0.0.1:7000/0",
            "PATH": "/usr/bin",
        },
        made={"WEBHOOK_SIGNING_SECRET": "made-by-make-run"},
    )
    assert shown == {"WEBHOOK_SOURCES": "inbound,stripe"}
    assert hidden == {
        "WEBHOOK_SECRET_STRIPE": "whsec_given",
        "REDIS_URL": "redis://:pw@127.0.0.1:7000/0",
    }
    write_stack_secrets(hidden, tmp_path)
    assert (tmp_path / "var" / "stack.env").stat().st_mode & 0o777 == 0o600
    assert stack_secrets(tmp_path) == hidden
    remove_stack_file(tmp_path)
    assert not (tmp_path / "var" / "stack.env").exists()
