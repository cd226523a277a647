"""What `make run` prints on a terminal: one line per event state and per lifecycle step.

The whole session runs once, as a newcomer meets it (a pseudo-terminal, `make run`, a few
events, the dashboard, a quiet spell long enough for the worker's maintenance to run twice,
Ctrl+C); each test then asserts one thing about what the terminal showed. The install
step's noise is tested on the Makefile itself, with a stand-in pip.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from dotenv import dotenv_values
from redis import Redis
from rq.group import Group

from tests.conftest import ROOT
from tests.processes import wait_until
from tests.test_devstack import DEVSTACK, Terminal, _answers, _checkout, make_run, unconfigured_env
from workers.dev.stackfile import StackFile

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# honcho's prefix: `04:33:52 worker.1    | `.
PREFIX = re.compile(r"^\d\d:\d\d:\d\d (\S+)\s*\| ")
TIME = re.compile(r"\d\d:\d\d:\d\d")


def _session(root: Path, terminal: Terminal) -> str:
    stack_file = root / "var" / "stack.json"
    wait_until(lambda: "send:  " in terminal.output, 60, f"make run to start:\n{terminal.output}")
    stack = StackFile.read(stack_file)
    assert stack is not None
    wait_until(lambda: _answers(stack.receiver + "/readyz"), 60, "the receiver")
    wait_until(lambda: _answers(stack.dashboard + "/"), 60, "the dashboard")
    clean = unconfigured_env()

    def send(*args: str) -> None:
        sent = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "webhooks"), "send", "inbound", *args],
            cwd=root,
            env=clean,
            capture_output=True,
            text=True,
            check=False,
        )
        assert sent.returncode == 0, (sent.stdout, sent.stderr, terminal.output)

    send("order.created", "--id", "evt_ok")
    send("demo.flaky", "--id", "evt_flaky")  # one retry (WEBHOOK_MAX_RETRIES=1), then dead
    send("demo.flaky", "--id", "evt_flaky")  # the duplicate
    wait_until(lambda: "dead_lettered inbound evt_flaky" in terminal.output, 60, "the dead letter")
    login = dotenv_values(root / "var" / "dev.env")
    auth = (login["RQ_DASHBOARD_USERNAME"] or "", login["RQ_DASHBOARD_PASSWORD"] or "")
    for path in ("/", "/events", "/", "/events"):
        assert httpx.get(stack.dashboard + path, auth=auth, timeout=10).status_code == 200

    # The quiet spell: until the worker's maintenance has provably run three times more
    # (twice after the first: 4 s at least, as WEBHOOK_MAINTENANCE_INTERVAL is 2 here, not
    # the 10 that would make the test wait 20 s for the same three runs). Each run
    # takes RQ's group-cleaning lock (a SET), which Redis announces on the key's channel.
    redis = Redis.from_url(stack.redis_url)
    redis.config_set("notify-keyspace-events", "K$")
    channel = redis.pubsub()
    channel.psubscribe(f"__keyspace@*__:{Group.REDIS_GROUP_CLEANING_KEY}")
    sets = 0
    deadline = time.monotonic() + 90
    while sets < 3 and time.monotonic() < deadline:
        message = channel.get_message(timeout=1)
        if message and message["type"] == "pmessage" and message["data"] == b"set":
            sets += 1
    channel.close()
    redis.close()
    assert sets == 3, f"the worker's maintenance ran {sets} times in 90 s"

    terminal.press_ctrl_c()
    assert terminal.process.wait(60) == 0, terminal.output
    # Read to its end (the terminal's last writer gone), not for a while: on a loaded machine
    # the reader's last chunk came more than 10 s after make's exit once.
    assert terminal.reader is not None
    terminal.reader.join(60)
    assert "the stack is down" in terminal.output, terminal.output[-2000:]
    return ANSI.sub("", terminal.output).replace("\r\n", "\n")


# The session's text, once per process: an xdist worker may tear a module's fixtures down
# between two of its tests (when it does not yet know its next one) and set them up again.
_SESSION: list[str] = []


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The terminal's text of one whole `make run` session."""
    if not _SESSION:
        tmp_path = tmp_path_factory.mktemp("session")
        # test_devstack's fixture, for the whole module: one session, several assertions.
        fixture = make_run.__wrapped__(tmp_path)
        start: Callable[..., Terminal] = next(fixture)
        root = _checkout(tmp_path)
        try:
            _SESSION.append(
                _session(
                    root, start(root, WEBHOOK_MAX_RETRIES="1", WEBHOOK_MAINTENANCE_INTERVAL="2")
                )
            )
        finally:
            next(fixture, None)
    return _SESSION[0]


def _process_lines(text: str) -> list[str]:
    """Each line honcho printed, without its own time prefix."""
    return [PREFIX.sub(r"\1 | ", line) for line in text.splitlines() if PREFIX.match(line)]


e2e = [pytest.mark.e2e, pytest.mark.xdist_group(DEVSTACK)]
# The first test of the module sets the whole session up: start, events, a quiet spell of
# three maintenance runs (up to 90 s), Ctrl+C (up to 60 s). On a loaded machine that has
# passed the suite's 120 s default, failing a test whose session was merely slow.
pytestmark = pytest.mark.timeout(360)


@e2e[0]
@e2e[1]
def test_every_event_state_is_one_line(session: str) -> None:
    for state in (
        "accepted inbound evt_ok order.created",
        "done inbound evt_ok order.created",
        "accepted inbound evt_flaky demo.flaky",
        "retry_scheduled inbound evt_flaky demo.flaky",
        "dead_lettered inbound evt_flaky demo.flaky",
        "duplicate inbound evt_flaky demo.flaky",
    ):
        assert session.count(state) == 1, f"{state!r} in:\n{session}"


@e2e[0]
@e2e[1]
def test_no_line_is_printed_twice(session: str) -> None:
    lines = _process_lines(session)
    assert len(lines) == len(set(lines)), session
    # uvicorn's access line repeated each delivery's state line.
    assert "HTTP/1.1" not in session, session


@e2e[0]
@e2e[1]
def test_the_workers_periodic_maintenance_prints_nothing(session: str) -> None:
    assert "cleaning" not in session and "registries" not in session, session


@e2e[0]
@e2e[1]
def test_a_line_carries_one_timestamp(session: str) -> None:
    for line in session.splitlines():
        assert len(TIME.findall(line)) <= 1, line


@e2e[0]
@e2e[1]
def test_ctrl_c_reads_as_a_clean_stop(session: str) -> None:
    stopping = session[session.rindex("^C") :]
    assert "SIGTERM" not in stopping and "rc=" not in stopping, stopping
    assert "received" not in stopping, stopping
    for name in ("web.1", "worker.1", "dashboard.1"):
        assert re.search(rf"\| {re.escape(name)} stopped$", stopping, re.M), stopping


@e2e[0]
@e2e[1]
def test_make_echoes_no_command_before_the_banner(session: str) -> None:
    assert session.startswith("redis:     redis://"), session


@e2e[0]
@e2e[1]
def test_startup_is_one_line_per_process(session: str) -> None:
    started = session[: session.rindex("\n", 0, session.index("accepted inbound evt_ok"))]
    by_process: dict[str, int] = {}
    for line in _process_lines(started):
        name = line.split(" | ", 1)[0]
        by_process[name] = by_process.get(name, 0) + 1
    # web, worker, dashboard: one line each, and no warning the user has nothing to do with.
    assert by_process.pop("system") == 3, started
    assert by_process.pop("web.1") == 1, started
    assert by_process.pop("dashboard.1") == 1, started
    assert by_process.pop("worker.1") == 1, started
    assert " warning " not in started, started


# A stand-in for python: the version check, `-m venv` (it copies itself in) and, for pip,
# the kind of noise a real install prints, on both streams.
FAKE_PYTHON = """#!/bin/sh
case "$1" in -c) exit 0;; --version) echo "Python 3.99.0"; exit 0;; esac
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi
echo "WARNING: Location 'file:///nowhere' is ignored"
echo "  BuildBackendWarning: project.license as a TOML table is deprecated" >&2
exit "${FAKE_PIP_STATUS:-0}"
"""


@pytest.fixture
def make_install(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`make TARGET` in a scratch checkout whose python is the stand-in above."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        (root / name).symlink_to(ROOT / name)
    tools = tmp_path / "bin"
    tools.mkdir()
    python = tools / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    (tools / "redis-server").symlink_to("/bin/true")  # on the PATH: no embedded one

    def run(target: str, **env: str) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
        return subprocess.run(
            ["make", target, f"PYTHON={python}"],
            cwd=root,
            env={**clean, "PATH": f"{tools}:/usr/bin:/bin", **env},
            capture_output=True,
            text=True,
            check=False,
        )

    return run


def test_make_install_prints_one_line_per_step_and_none_of_pips_output(
    make_install: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    done = make_install("install-test")
    assert done.returncode == 0, done
    assert done.stdout.splitlines() == [
        "creating .venv with Python 3.99.0 ...",
        "installing rq-webhook-receiver into .venv ...",
        "installing the test tools into .venv ...",
    ]
    assert done.stderr == ""


def test_a_failing_install_step_shows_pips_output_and_fails(
    make_install: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    failed = make_install("install", FAKE_PIP_STATUS="1")
    assert failed.returncode != 0
    shown = failed.stdout + failed.stderr
    assert "WARNING: Location 'file:///nowhere' is ignored" in shown, failed
    assert "BuildBackendWarning" in shown, failed


def test_the_package_builds_without_setuptools_warnings(tmp_path: Path) -> None:
    """The metadata step of `pip install -e .`, where setuptools warned four times about
    the license table."""
    for name in ("pyproject.toml", "README.md"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    pip = [str(ROOT / ".venv" / "bin" / "python"), "-m", "pip"]
    built = subprocess.run(
        [*pip, "install", "--dry-run", "--no-deps", "--quiet", "-e", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built
    assert "Warning" not in built.stdout + built.stderr, built
