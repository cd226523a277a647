"""`make run` as a newcomer meets it: development retries, the `webhooks` command finding the
stack by itself, and Ctrl+C leaving nothing behind.

The Ctrl+C test runs the real `make run` in a pseudo-terminal, in a scratch checkout (so it
never touches this checkout's var/), and presses Ctrl+C there: the terminal sends SIGINT to
its foreground process group, as it does for a person."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import tempfile
import termios
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from app.keys import job_id_for
from tests.conftest import ROOT
from tests.processes import wait_until
from workers.dev.devenv import DEV_RETRY_INTERVALS, dev_settings, retries_line
from workers.dev.stackfile import StackFile

# `webhooks dev` takes the first free trio of ports from 8000: two started at once (two xdist
# workers) can both see 8000 free and race for it, and the loser's `webhooks send` reaches
# the winner's receiver (a 401). So one stack at a time, across the workers: a file lock,
# held from a stack's start to its end. The xdist group keeps them on one worker, where it
# can, so that no worker waits for another.
DEVSTACK = "devstack"
_STACK_LOCK = Path(tempfile.gettempdir()) / "webhook-receiver-tests-devstack.lock"


def unconfigured_env() -> dict[str, str]:
    """The environment with none of the receiver's settings (nor make's), as a newcomer's
    shell has it: what `make run` and the `webhooks` command of its checkout are given."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MAKE", "WEBHOOK_", "RQ_DASHBOARD_", "REDIS_"))
    }


@contextlib.contextmanager
def one_stack_at_a_time() -> Iterator[None]:
    with _STACK_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def test_unset_retry_intervals_get_development_values_that_dead_letter_within_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    dev = dev_settings(terminal=False)
    assert dev.values["WEBHOOK_RETRY_INTERVALS"] == DEV_RETRY_INTERVALS
    intervals = [int(i) for i in DEV_RETRY_INTERVALS.split(",")]
    assert sum(intervals) <= 50  # five retries, plus the attempts themselves, within a minute
    line = retries_line(intervals, dev)
    assert "development intervals, as WEBHOOK_RETRY_INTERVALS is not set" in line
    assert "a dead letter in about 38 s" in line


def test_configured_retry_intervals_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("WEBHOOK_RETRY_INTERVALS=10,30,120,600,1800\n")
    dev = dev_settings(terminal=True)
    assert "WEBHOOK_RETRY_INTERVALS" not in dev.values
    assert dev.values["WEBHOOK_LOG_FORMAT"] == "text"
    assert "dead letter in about 43 min" in retries_line([10, 30, 120, 600, 1800], dev)


@pytest.mark.parametrize(
    ("sources", "handlers"),
    [
        (None, "examples.handlers"),
        ("inbound,stripe", "examples.handlers,examples.stripe_handlers"),
        ("stripe", "examples.stripe_handlers"),
        ("github", None),
    ],
)
def test_make_run_loads_the_example_handlers_of_configured_sources_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sources: str | None, handlers: str | None
) -> None:
    """A handler of a source that is not configured makes the worker warn: on a plain
    `make run`, the Stripe example printed a warning the user had nothing to do with."""
    monkeypatch.chdir(tmp_path)
    if sources is not None:
        (tmp_path / ".env").write_text(f"WEBHOOK_SOURCES={sources}\n")
    assert dev_settings(terminal=False).values.get("WEBHOOK_HANDLERS") == handlers


def _checkout(tmp_path: Path) -> Path:
    """A scratch checkout sharing this one's .venv and files, with nothing configured."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in (
        "Makefile",
        "Procfile",
        "pyproject.toml",
        "constraints.txt",
        ".venv",
        "examples",
        "app",
    ):
        (root / name).symlink_to(ROOT / name)
    return root


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Terminal:
    """`make run` on a pseudo-terminal, with everything it prints collected."""

    process: subprocess.Popen[bytes]
    primary: int
    chunks: list[bytes] = field(default_factory=list)
    # Ends when the terminal has nothing more to read: every process that held it is gone.
    reader: threading.Thread | None = None

    @property
    def output(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def read_all(self) -> None:
        while True:
            try:
                data = os.read(self.primary, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append(data)

    def press_ctrl_c(self) -> None:
        os.write(self.primary, b"\x03")


@pytest.fixture
def stack_lock() -> Iterator[None]:
    with one_stack_at_a_time():
        yield


@pytest.fixture
def make_run(tmp_path: Path) -> Iterator[Callable[..., Terminal]]:
    terminals: list[Terminal] = []
    locked = contextlib.ExitStack()

    def start(root: Path, target: str = "run", **env: str) -> Terminal:
        if not terminals:
            locked.enter_context(one_stack_at_a_time())
        primary, secondary = os.openpty()

        def controlling_terminal() -> None:  # runs in the child, after setsid
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        # Nothing configured but what the test gives: a fixture wider than a function runs
        # before the suite's own clean-up of the environment, which may hold its settings.
        clean = unconfigured_env()
        process = subprocess.Popen(
            # -o: the scratch checkout shares this one's .venv but not its packages; a
            # reinstall from there would point the shared .venv at nothing.
            ["make", "-o", ".venv/.installed", target],
            cwd=root,
            env={**clean, **env},
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
        os.close(secondary)
        terminal = Terminal(process, primary)
        terminal.reader = threading.Thread(target=terminal.read_all, daemon=True)
        terminal.reader.start()
        terminals.append(terminal)
        return terminal

    with locked:
        yield start
        for terminal in terminals:
            _kill_tree(terminal.process)
            os.close(terminal.primary)


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """What a failed test leaves: the process and everything it started, redis included."""
    if process.poll() is None:
        for pid in _descendants(process.pid) | {process.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait()


@pytest.mark.e2e
@pytest.mark.xdist_group(DEVSTACK)
def test_make_run_serves_the_newcomer_path_and_ctrl_c_leaves_nothing_running(
    tmp_path: Path, make_run: Callable[..., Terminal]
) -> None:
    root = _checkout(tmp_path)
    # A demo.flaky event dead-letters at once here; the intervals are the test above.
    terminal = make_run(root, WEBHOOK_MAX_RETRIES="0")
    stack_file = root / "var" / "stack.json"
    # The stack file is written just before the banner, which ends with its send line.
    wait_until(lambda: "send:  " in terminal.output, 60, f"make run to start:\n{terminal.output}")
    stack = StackFile.read(stack_file)
    assert stack is not None
    assert stack.settings["WEBHOOK_RETRY_INTERVALS"] == DEV_RETRY_INTERVALS
    wait_until(lambda: _answers(stack.receiver + "/readyz"), 60, "the receiver")
    wait_until(lambda: _answers(stack.dashboard + "/"), 60, "the dashboard")
    assert "a failing event is a dead letter at once" in terminal.output

    assert "send:      .venv/bin/webhooks send inbound" in terminal.output
    # `webhooks` in that checkout, with nothing configured, finds the stack.
    clean_env = unconfigured_env()

    def webhooks(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ROOT / ".venv" / "bin" / "webhooks"), *args],
            cwd=root,
            env=clean_env,
            capture_output=True,
            text=True,
            check=False,
        )

    # The printed send line, signed with the secret make run made.
    sent = webhooks("send", "inbound", "demo.flaky", "--id", "evt_demo", "--json")
    assert json.loads(sent.stdout) == {"status": "accepted", "id": "evt_demo", "http_status": 200}
    again = webhooks("send", "inbound", "demo.flaky", "--id", "evt_demo")
    assert again.returncode == 0 and again.stdout.startswith("duplicate evt_demo → "), again

    def dead_list() -> subprocess.CompletedProcess[str]:
        return webhooks("dead", "list")

    job_id = job_id_for("inbound", "evt_demo")
    wait_until(lambda: job_id in dead_list().stdout, 30, "the dead letter")
    listed = dead_list()
    assert "the `make run` stack of this checkout, var/stack.json" in listed.stderr

    running = _descendants(terminal.process.pid)
    assert len(running) >= 5  # redis, honcho, web, worker, dashboard at least
    before = len(terminal.output)
    terminal.press_ctrl_c()
    assert terminal.process.wait(60) == 0, terminal.output
    # Read to its end (the terminal's last writer gone): nothing more can be printed.
    assert terminal.reader is not None
    terminal.reader.join(30)
    assert not terminal.reader.is_alive()
    stopping = terminal.output[before:]
    assert "Traceback" not in stopping and "Error" not in stopping, stopping
    assert [pid for pid in running if _running(pid)] == []
    assert not stack_file.exists()
    assert not _answers(stack.receiver + "/healthz")
    # Redis went last: the worker never saw it go away.
    assert stopping.index("worker.1 stopped") < stopping.index("redis stopped")
    assert stopping.rstrip().endswith("redis stopped; the stack is down")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code < 500
    except httpx.HTTPError:
        return False


@pytest.mark.e2e
@pytest.mark.xdist_group(DEVSTACK)
def test_sigint_to_the_stack_without_a_terminal_stops_it_in_order_and_exits_0(
    tmp_path: Path, stack_lock: None
) -> None:
    """Where there is no terminal (CI, a supervisor), a SIGINT to the process group stops the
    stack the same way. (Through make it would exit 130: GNU make kills itself with the
    SIGINT it received; the terminal test above shows why `make run` does not get one.)"""
    root = _checkout(tmp_path)
    log = tmp_path / "stack.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "webhooks"), "dev"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until((root / "var" / "stack.json").exists, 60, "the stack")
        stack = StackFile.read(root / "var" / "stack.json")
        assert stack is not None
        wait_until(lambda: _answers(stack.receiver + "/readyz"), 60, "the receiver")
        running = _descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(60) == 0
        output = log.read_text()
        assert "Traceback" not in output, output
        assert [pid for pid in running if _running(pid)] == []
        assert output.rstrip().endswith("redis stopped; the stack is down")
    finally:
        _kill_tree(process)


@pytest.mark.e2e
@pytest.mark.xdist_group(DEVSTACK)
def test_make_run_cluster_runs_the_stack_on_a_local_cluster_and_ctrl_c_stops_all_of_it(
    tmp_path: Path, make_run: Callable[..., Terminal]
) -> None:
    root = _checkout(tmp_path)
    terminal = make_run(root, target="run-cluster")
    wait_until(lambda: "send:  " in terminal.output, 90, f"the stack to start:\n{terminal.output}")
    assert "redis:     a local cluster, 3 primaries + 3 replicas: 127.0.0.1:" in terminal.output
    assert "dashboard: not on a cluster yet" in terminal.output
    stack = StackFile.read(root / "var" / "stack.json")
    assert stack is not None
    wait_until(lambda: _answers(stack.receiver + "/readyz"), 60, "the receiver")

    def send(event_id: str) -> subprocess.CompletedProcess[str]:
        webhooks = str(ROOT / ".venv" / "bin" / "webhooks")
        return subprocess.run(
            [webhooks, "send", "inbound", "order.created", "--id", event_id],
            cwd=root,
            env=unconfigured_env(),
            capture_output=True,
            text=True,
            check=False,
        )

    for n in range(4):
        assert send(f"evt_c{n}").stdout.startswith(f"accepted evt_c{n} → ")
    assert send("evt_c0").stdout.startswith("duplicate evt_c0 → ")
    for n in range(4):
        wait_until(
            lambda n=n: f"done inbound evt_c{n} order.created" in terminal.output,
            60,
            f"evt_c{n} handled:\n{terminal.output}",
        )
    running = _descendants(terminal.process.pid)
    terminal.press_ctrl_c()
    assert terminal.process.wait(60) == 0, terminal.output
    assert [pid for pid in running if _running(pid)] == []
    assert terminal.output.rstrip().endswith(
        "the local cluster stopped (its data with it); the stack is down"
    )
