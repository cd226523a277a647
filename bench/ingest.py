"""Ingest: requests/s of the real receiver over a no-op FastAPI endpoint that only reads the
body; same uvicorn flags, same wrk load and concurrency, alternating, on the same Redis
(appendfsync always); with p50/p99 latency of both. Every request is a new signed event,
of about 120 bytes, as the figures the issues quote were measured."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from redis import Redis

from bench.common import BIN, ROOT, SECRET
from workers.dev.redis_server import free_port


def signed_bodies(path: Path, count: int, tag: str) -> None:
    with path.open("w") as out:
        for n in range(count):
            body = json.dumps(
                {
                    "id": f"evt_{tag}_{n:08d}",
                    "type": "order.created",
                    "data": {"object": {"id": f"ord_{n}", "amount": 4200}},
                },
                separators=(",", ":"),
            )
            signature = hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()
            out.write(f"{signature} {body}\n")


def protocol_flags() -> list[str]:
    """The Procfile's `--http` and `--ws` (the connection guard): both apps are served by
    the protocol the `web:` process runs."""
    line = next(x for x in (ROOT / "Procfile").read_text().splitlines() if x.startswith("web:"))
    words = shlex.split(line)
    flags = []
    for flag, value in itertools.pairwise(words):
        if flag in ("--http", "--ws"):
            flags += [flag, value]
    return flags


def serve(app: str, port: int, env: dict[str, str], cwd: Path = ROOT) -> subprocess.Popen[bytes]:
    """uvicorn serving `app` from `cwd` (its `app` package first on the path: another
    checkout's, for an A/B, with this checkout's installed libraries)."""
    process = subprocess.Popen(
        [
            str(BIN / "uvicorn"),
            app,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
            *protocol_flags(),
        ],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            import httpx

            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return process
        except Exception:
            time.sleep(0.05)
    raise RuntimeError(f"{app} did not start")


def wrk(port: int, bodies: Path, seconds: int, connections: int, threads: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            "wrk",
            "-t",
            str(threads),
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "-s",
            str(ROOT / "bench" / "signed.lua"),
            f"http://127.0.0.1:{port}/webhooks/inbound",
        ],
        env={**os.environ, "BODIES": str(bodies), "THREADS": str(threads)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    summary["rps"] = summary["requests"] / (summary["duration_us"] / 1e6)
    return summary


def one_run(
    app: str,
    env: dict[str, str],
    tmp: Path,
    tag: str,
    seconds: int,
    connections: int,
    threads: int,
    cwd: Path = ROOT,
) -> dict[str, Any]:
    """One wrk run (after a second's warm-up, whose requests it counts) against a fresh server
    of `app`."""
    bodies = tmp / f"{tag}.txt"
    # More bodies than any run can send: every request is a new event.
    signed_bodies(bodies, 60_000 * seconds // 10, tag)
    port = free_port()
    server = serve(app, port, env, cwd)
    try:
        warm_up = wrk(port, bodies, 1, connections, threads)
        return {**wrk(port, bodies, seconds, connections, threads), "warm_up": warm_up["requests"]}
    finally:
        server.terminate()
        server.wait()


def ingest(
    redis_url: str,
    rounds: int,
    seconds: int,
    connections: int,
    threads: int,
    **receiver_env: str,
) -> dict[str, Any]:
    env = {
        "REDIS_URL": redis_url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_KEY_PREFIX": "bench",
        **receiver_env,
    }
    results: dict[str, list[dict[str, Any]]] = {"noop": [], "receiver": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for name, app in (("noop", "bench.noop_app:app"), ("receiver", "app.main:app")):
                tag = f"{name}{round_}"
                run = one_run(app, env, Path(tmp), tag, seconds, connections, threads)
                results[name].append(run)
                Redis.from_url(redis_url).flushall()
    return {**compare(results, "receiver", "noop"), "duplicates_answered": 0}


def compare(runs: dict[str, list[dict[str, Any]]], measured: str, baseline: str) -> dict[str, Any]:
    """wrk runs of two setups, side by side: the median of the rounds' ratios of requests/s,
    each setup's median figures, and every error answered by either."""
    ratios = [m["rps"] / b["rps"] for m, b in zip(runs[measured], runs[baseline], strict=True)]
    return {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        **{
            f"{name}_{key}": statistics.median(run[key] for run in results)
            for name, results in runs.items()
            for key in ("rps", "p50_us", "p99_us")
        },
        "non_2xx": sum(
            run["non_2xx"] + run["socket_errors"] for results in runs.values() for run in results
        ),
    }


def ingest_ab(
    redis_url: str, rounds: int, seconds: int, connections: int, threads: int, against: Path
) -> dict[str, Any]:
    """This checkout's receiver over `against`'s (a baseline commit's worktree), on one
    Redis, alternating: a change that slows the one-Redis path shows here."""
    env = {"REDIS_URL": redis_url, "WEBHOOK_SIGNING_SECRET": SECRET, "WEBHOOK_KEY_PREFIX": "bench"}
    results: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for name, cwd in (("this", ROOT), ("baseline", against)):
                tag = f"{name}{round_}"
                run = one_run(
                    "app.main:app", env, Path(tmp), tag, seconds, connections, threads, cwd
                )
                results[name].append(run)
                Redis.from_url(redis_url).flushall()
    return compare(results, "this", "baseline")
