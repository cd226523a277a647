"""Drain: events/s the worker takes off a full queue, over a bare BRPOP loop on the same Redis.

The worker runs as the Procfile starts it (`webhooks worker --burst`), with no handler (every
job settles as ignored) or with one no-op handler (`bench/noop_handler.py`: every job runs
it and settles as done); its rate is counted from the first job's start to the last job's
end, so process start-up is excluded, as it is from the bare loop's. Each round measures
the bare loop right beside the worker.

`ab` compares the one-handler drain of this checkout with another checkout's (a baseline
commit's worktree, with its own `.venv`), round by round on one Redis, alternating.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from redis import Redis
from rq.utils import utcparse

from bench.common import ROOT, SECRET, bench_settings, fill, summary

# The baseline: pops ids one by one until the list is empty; times itself from the first pop.
BARE_LOOP = """
import sys, time
from redis import Redis
r = Redis.from_url(sys.argv[1])
r.brpop("bench:bare", timeout=1)
started = time.perf_counter()
while r.brpop("bench:bare", timeout=1):
    pass
print(time.perf_counter() - started - 1.0)
"""


def bare_loop(redis_url: str, events: int) -> float:
    connection = Redis.from_url(redis_url)
    connection.flushall()
    payload = "x" * 1000
    with connection.pipeline(transaction=False) as pipe:
        for n in range(events):
            pipe.rpush("bench:bare", f"job-{n}-{payload}")
        pipe.execute()
    out = subprocess.run(
        [sys.executable, "-c", BARE_LOOP, redis_url], check=True, capture_output=True, text=True
    ).stdout
    return events / float(out)


def worker_rate(
    redis_url: str,
    events: int,
    mode: str,
    workers: int,
    handler: bool = False,
    root: Path = ROOT,
    env: Mapping[str, str] | None = None,
    traced: bool = False,
) -> float:
    """`env`: more of the workers' environment; `traced`: every job carries a traceparent."""
    settings = bench_settings(redis_url)
    connection = Redis.from_url(redis_url)
    connection.flushall()
    fill(settings, connection, events, "d", traced)
    run_workers(redis_url, mode, workers, handler, root, env)
    outcome = "done" if handler else "ignored"
    settled = int(connection.hget("bench:stats:inbound", outcome) or 0)
    assert settled == events, f"the workers settled {settled} of {events} as {outcome}"
    return events / busy_seconds(connection)


def run_workers(
    redis_url: str,
    mode: str,
    workers: int,
    handler: bool = False,
    root: Path = ROOT,
    more_env: Mapping[str, str] | None = None,
) -> None:
    """`webhooks worker --burst` as the Procfile starts it, `workers` at once, to the end."""
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_KEY_PREFIX": "bench",
        "WEBHOOK_WORKER_MODE": mode,
        "PATH": f"{root / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
        **(more_env or {}),
    }
    if handler:
        env["WEBHOOK_HANDLERS"] = "bench.noop_handler"
    processes = [
        subprocess.Popen(
            ["webhooks", "worker", "--burst"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    for process in processes:
        assert process.wait() == 0


def busy_seconds(connection: Redis) -> float:
    """From the first job's start to the last one's end."""
    ids = connection.zrange("rq:finished:webhooks", 0, -1)
    with connection.pipeline(transaction=False) as pipe:
        for job_id in ids:
            pipe.hmget(b"rq:job:" + job_id, "started_at", "ended_at")
        stamps = pipe.execute()
    starts = [utcparse(s.decode()).timestamp() for s, _ in stamps if s]
    ends = [utcparse(e.decode()).timestamp() for _, e in stamps if e]
    return max(ends) - min(starts)


def drain(
    redis_url: str, rounds: int, events: int, mode: str, handler: bool = False
) -> dict[str, Any]:
    pairs = []
    for _ in range(rounds):
        baseline = bare_loop(redis_url, events)
        pairs.append((worker_rate(redis_url, events, mode, 1, handler), baseline))
    return summary(pairs)


def ab(redis_url: str, rounds: int, events: int, mode: str, against: Path) -> dict[str, Any]:
    """This checkout's one-handler drain over `against`'s, alternating which goes first."""
    pairs = []
    for n in range(rounds):
        if n % 2:
            this = worker_rate(redis_url, events, mode, 1, True)
            other = worker_rate(redis_url, events, mode, 1, True, against)
        else:
            other = worker_rate(redis_url, events, mode, 1, True, against)
            this = worker_rate(redis_url, events, mode, 1, True)
        pairs.append((this, other))
    return summary(pairs)


def scaling(redis_url: str, rounds: int, events: int) -> dict[str, Any]:
    """Two worker processes over one, alternating, default mode."""
    pairs = []
    for _ in range(rounds):
        one = worker_rate(redis_url, events, "fork", 1)
        pairs.append((worker_rate(redis_url, events, "fork", 2), one))
    return summary(pairs)
