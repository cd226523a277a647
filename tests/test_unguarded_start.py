"""A receiver started without the HTTP guard says so, once, at startup; the Procfile's and
every deployment example's command carries the guard."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from app.main import GUARD
from tests.conftest import SECRET
from tests.processes import ROOT, Process, procfile, start, wait_http
from tests.test_import_graph import imported, modules
from workers.dev.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e

DEPLOY = ROOT / "examples" / "deploy"
WARNING = "the HTTP bounds are off"


def run_receiver(command: str, redis_server: RedisServer, log_dir: Path) -> str:
    """Start `command` as the web process, wait until it serves, stop it: what it said."""
    port = free_port()
    env = {
        "REDIS_URL": redis_server.url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    log = log_dir / f"web-{port}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            ["/bin/sh", "-c", "exec " + command],
            cwd=ROOT,
            env={
                **os.environ,
                **env,
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            },
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    process = Process("web", popen, log, port)
    try:
        wait_http(process.url + "/healthz", process, timeout=60)
    finally:
        process.stop()
    return process.output()


def test_a_receiver_started_without_the_guard_says_so_in_one_warning_line(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    # As FastAPI's docs and most container examples start an app.
    output = run_receiver("uvicorn app.main:app --host $HOST --port $PORT", redis_server, tmp_path)
    warnings = [line for line in output.splitlines() if WARNING in line]
    assert len(warnings) == 1, output
    record = json.loads(warnings[0])
    assert record["level"] == "warning"
    assert GUARD in record["msg"] and "docs/deployment.md" in record["msg"]


def test_the_procfiles_receiver_starts_guarded_and_says_nothing_of_it(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    process = start(
        "web",
        {"REDIS_URL": redis_server.url, "WEBHOOK_SIGNING_SECRET": SECRET, "PORT": str(free_port())},
        tmp_path,
    )
    try:
        wait_http(process.url + "/healthz", process, timeout=60)
    finally:
        process.stop()
    assert "receiver started" in process.output()
    assert WARNING not in process.output()


def test_nothing_of_ours_imports_the_guard() -> None:
    """`app.main.guarded` reads a loaded guard module as uvicorn's `--http` having loaded it."""
    known = set(modules())
    importers = [
        name
        for name, path in modules().items()
        if name != "app.http_guard" and "app.http_guard" in imported(name, path, known)
    ]
    assert importers == []


def commands(path: Path) -> list[list[str]]:
    """Each process's command in a deployment example, as the words it runs."""
    text = path.read_text()
    if path.suffix == ".service":
        return [shlex.split(line) for line in re.findall(r"^ExecStart=(.+)$", text, re.M)]
    pattern = r"^CMD (\[.+\])$" if path.name == "Dockerfile" else r"^\s*command: (\[.+\])$"
    return [json.loads(found) for found in re.findall(pattern, text, re.M)]


def shape(words: list[str]) -> list[str]:
    """A command without what a deployment chooses: the executable's directory and the
    values of --host and --port (`${PORT:-8000}` in the Procfile)."""
    words = [Path(words[0]).name, *words[1:]]
    for option in ("--host", "--port"):
        if option in words:
            at = words.index(option)
            words[at + 1] = "*"
    return words


EXAMPLES = sorted(p for p in DEPLOY.rglob("*") if p.is_file())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_deployment_example_runs_the_procfiles_commands(example: Path) -> None:
    procfiles = [shape(shlex.split(line)) for line in procfile().values()]
    ours = [words for words in commands(example) if shape(words)[0] in ("uvicorn", "webhooks")]
    assert ours, f"no process command found in {example}"
    for words in ours:
        assert shape(words) in procfiles, words
        if shape(words)[0] == "uvicorn":
            assert f"--http {GUARD}" in shlex.join(words)
