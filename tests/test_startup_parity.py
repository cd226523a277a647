"""`webhooks config check` and the processes it speaks for agree: one table of
configurations, each run through the check and through the Procfile's three processes as
they start. A configuration the check passes starts every process; one it refuses stops
exactly the processes it concerns, each with the check's words, and no other.

A missing extra is a package made unimportable in those processes (a `sitecustomize` on
their PYTHONPATH): the test environment has every extra installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import AUTH, SECRET
from tests.processes import ROOT, Process, start
from workers.dev.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e

ALL = frozenset({"web", "worker", "dashboard"})
TRACED = frozenset({"web", "worker"})
DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.example/7"
BLOCKER = """import os, sys
for name in filter(None, os.environ.get("BLOCKED_IMPORTS", "").split(",")):
    sys.modules[name] = None  # `import name` (and of its submodules) raises ImportError
"""


@dataclass(frozen=True)
class Case:
    env: dict[str, str]
    refused: frozenset[str] = frozenset()  # the Procfile processes that must not start
    blocked: str = ""  # a package the processes cannot import (an extra not installed)
    problems: int = field(default=1, compare=False)


CASES = {
    "all well": Case({}, problems=0),
    "tracing to the console": Case({"OTEL_TRACES_EXPORTER": "console"}, problems=0),
    "tracing without the otel extra": Case(
        {"OTEL_TRACES_EXPORTER": "otlp"}, TRACED, blocked="opentelemetry.sdk"
    ),
    "otlp over grpc": Case(
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, TRACED
    ),
    "otlp traces over grpc": Case(
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, TRACED
    ),
    "an unknown exporter": Case({"OTEL_TRACES_EXPORTER": "zipkin"}, TRACED),
    "sentry without the sentry extra": Case({"SENTRY_DSN": DSN}, {"worker"}, "sentry_sdk"),
    "a short dashboard password": Case({"RQ_DASHBOARD_PASSWORD": "short"}, {"dashboard"}),
    "no dashboard login": Case({"RQ_DASHBOARD_USERNAME": ""}, {"dashboard"}),
    "a short replay token": Case({"WEBHOOK_REPLAY_TOKEN": "short"}, ALL),
    "two problems for the worker": Case(
        {"OTEL_TRACES_EXPORTER": "zipkin", "SENTRY_DSN": DSN},
        TRACED,
        blocked="sentry_sdk",
        problems=2,
    ),
}


@pytest.fixture
def environment(tmp_path: Path, redis_server: RedisServer) -> dict[str, str]:
    """What every process of a case and its check get: the case's settings on top."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    path = os.pathsep.join(p for p in [str(blocker), os.environ.get("PYTHONPATH", "")] if p)
    return {
        "PYTHONPATH": path,
        "REDIS_URL": redis_server.url,
        "HOST": "127.0.0.1",
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_HANDLERS": "tests.e2e_handlers",
        "WEBHOOK_QUEUE": f"parity-{tmp_path.name}",
        "RQ_DASHBOARD_USERNAME": AUTH[0],
        "RQ_DASHBOARD_PASSWORD": AUTH[1],
    }


def config_check(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "webhooks"), "config", "check", "--json"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report: dict[str, object] = json.loads(done.stdout)
    assert done.returncode == (0 if report["ok"] else 1), done.stderr
    return report


def started(process: Process) -> bool:
    """Whether the process is up: serving (web, dashboard) or listening for jobs (worker)."""
    if process.name == "worker":
        return "*** Listening on" in process.output()
    try:  # the dashboard answers 401 until it is given the login
        return (
            httpx.get(process.url + ("/healthz" if process.name == "web" else "/")).status_code
            < 500
        )
    except httpx.HTTPError:
        return False


def outcome(process: Process, timeout: float = 60) -> bool:
    """True once the process is up; False once it has exited (refused)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            return False
        if started(process):
            return True
        time.sleep(0.1)
    raise AssertionError(f"{process.name} neither started nor exited:\n{process.output()}")


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_config_check_refuses_what_the_processes_refuse_in_the_same_words(
    environment: dict[str, str], tmp_path: Path, case: Case
) -> None:
    env = {**environment, **case.env, "BLOCKED_IMPORTS": case.blocked}
    report = config_check(env)
    problems = report["problems"]
    assert isinstance(problems, list) and len(problems) == case.problems, problems

    processes = [start(name, {**env, "PORT": str(free_port())}, tmp_path) for name in sorted(ALL)]
    try:
        up = {p.name: outcome(p) for p in processes}
        assert {name for name, ok in up.items() if not ok} == case.refused, {
            p.name: p.output() for p in processes
        }
        said: set[str] = set()
        for process in processes:
            output = process.output()
            found = {problem for problem in problems if problem in output}
            if process.name in case.refused:
                assert process.popen.returncode != 0
                assert found, f"{process.name} refused for another reason:\n{output}"
            else:
                assert not found, output
            said |= found
        assert said == set(problems)  # each problem the check finds stops some process
    finally:
        for process in processes:
            process.stop()
