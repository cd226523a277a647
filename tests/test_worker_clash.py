"""`webhooks worker` in a project laid out as FastAPI's tutorial lays it out, its handlers in
its own `app` package: WEBHOOK_HANDLERS=app.handlers stops the worker at start with one line
that names the clash and the fix, and once the package is renamed as that line says, the
worker runs. A process of its own: in this one our `app` is imported already."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from redis import Redis

from tests.testing.project import fastapi_project, follow, imported
from workers.dev.redis_server import RedisServer

WEBHOOKS = str(Path(sys.executable).parent / "webhooks")


def environment(redis_url: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment.update(REDIS_URL=redis_url, WEBHOOK_SECRET_STRIPE="whsec_" + "s" * 32)
    return environment


def worker(root: Path, redis_url: str) -> subprocess.CompletedProcess[str]:
    """`webhooks worker` in the project's directory, with its .env, until it exits."""
    return subprocess.run(
        [WEBHOOKS, "worker"],
        cwd=root,
        env=environment(redis_url),
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def listening(root: Path, redis_url: str) -> list[str]:
    """The output of `webhooks worker` in the project's directory until it listens on its
    queue (then it is killed), or exits."""
    with subprocess.Popen(
        [WEBHOOKS, "worker"],
        cwd=root,
        env=environment(redis_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        deadline = threading.Timer(60, process.kill)
        deadline.start()
        said = []
        try:
            for line in process.stdout or ():
                said.append(line)
                if "Listening on webhooks" in line:
                    break
        finally:
            deadline.cancel()
            process.kill()
    return said


@pytest.mark.parametrize("init", [True, False], ids=["package", "without-init"])
def test_a_handler_module_in_the_projects_own_app_stops_the_worker_in_one_line(
    tmp_path: Path, redis_server: RedisServer, redis: Redis, init: bool
) -> None:
    root = tmp_path.resolve()
    marker = fastapi_project(root)
    if not init:  # merged with our `app`, and holding a main.py as ours does
        (root / "app" / "__init__.py").unlink()
    done = worker(root, redis_server.url)  # exits at start
    clash = (
        f"your package 'app' at {root / 'app'} clashes with rq-webhook-receiver's own "
        "top-level package 'app' (one Python process imports one 'app')"
        if init
        else f"your 'app' at {root / 'app'} has no __init__.py, so it merges with "
        "rq-webhook-receiver's own top-level package 'app', and both hold 'main'"
    )
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        f"Error: WEBHOOK_HANDLERS: cannot import 'app.handlers': {clash}: rename yours, e.g. "
        "app -> myshop, and its imports (from myshop.handlers import ..., "
        "WEBHOOK_HANDLERS=myshop.handlers)"
    ]
    assert "Traceback" not in done.stdout
    assert imported(marker) == []

    follow(root, done.stderr)
    said = listening(root, redis_server.url)
    assert "Listening on webhooks" in said[-1], said
    assert imported(marker) == ["myshop.handlers"]
