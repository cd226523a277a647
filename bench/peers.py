"""The workers a user would pick instead, draining the same no-op jobs on the same Redis:
Celery (solo pool) and dramatiq (8 threads). They are installed by the bench itself into a
venv of their own (bench/.peers), never into the product's; without network the lines are
left out and the bench says why."""

from __future__ import annotations

import os
import subprocess
import time
import venv
from pathlib import Path
from typing import Any

from redis import Redis

from bench.common import summary
from bench.drain import bare_loop

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".peers"
PACKAGES = ["celery[redis]>=5.4,<6", "dramatiq[redis]>=1.17,<3", "redis>=5,<9"]
COMMANDS = {
    "celery (solo)": (
        "celery",
        ["celery", "-A", "peer_tasks", "worker", "--pool=solo", "--concurrency=1",
         "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "warning"],
    ),
    "dramatiq (8 threads)": (
        "dramatiq",
        ["dramatiq", "peer_tasks", "--processes", "1", "--threads", "8"],
    ),
}  # fmt: skip


def install() -> Path | None:
    """The peers' venv, made once; None when it cannot be made (no network)."""
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / ".installed"
    if stamp.exists():
        return python
    venv.create(PEERS_VENV, with_pip=True)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *PACKAGES], capture_output=True
    )
    if done.returncode != 0:
        return None
    stamp.touch()
    return python


def peer_rate(python: Path, redis_url: str, events: int, peer: str, command: list[str]) -> float:
    connection = Redis.from_url(redis_url)
    connection.flushall()
    env = {
        **os.environ,
        "BENCH_REDIS_URL": redis_url,
        "BENCH_EVENTS": str(events),
        "BENCH_PEER": peer,
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
    }
    subprocess.run([str(python), "peer_tasks.py"], cwd=HERE, env=env, check=True)
    worker = subprocess.Popen(
        command, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 600
        while not (done := connection.get("bench:peer:done")):
            if time.monotonic() > deadline or worker.poll() is not None:
                raise RuntimeError(f"{peer} did not drain {events} jobs")
            time.sleep(0.1)
    finally:
        worker.terminate()
        worker.wait(30)
    first, last = (float(x) for x in done.split())
    return events / (last - first)


def peers(redis_url: str, rounds: int, events: int) -> dict[str, Any]:
    python = install()
    if python is None:
        return {"skipped": "could not install celery and dramatiq into bench/.peers"}
    found = {}
    for name, (peer, command) in COMMANDS.items():
        pairs = []
        for _ in range(rounds):
            baseline = bare_loop(redis_url, events)
            pairs.append((peer_rate(python, redis_url, events, peer, command), baseline))
        found[name] = summary(pairs)
    return found
