"""`make bench`: the receiver and the worker measured against baselines run side by side.

This machine is shared and noisy, so every figure is a ratio to a baseline measured in the
same way, on the same Redis, alternating runs:
- ingest: requests/s of the real receiver (signed unique events, `hmac` source, Redis with
  appendfsync always) over a no-op FastAPI endpoint that only reads the body; same uvicorn
  flags, same wrk load and concurrency; with p50/p99 latency of both;
- drain: events/s one worker process (`webhooks worker`, as the Procfile starts it; no
  handler, so every job settles as ignored) takes off a full queue, over a bare BRPOP loop;
- memory: Redis bytes per remembered dedupe key and per accepted event.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redis import Redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.intake import SyncIntake  # noqa: E402
from app.providers.base import Delivery  # noqa: E402
from app.settings import Settings  # noqa: E402
from workers.dev.redis_server import RedisServer, free_port  # noqa: E402

SECRET = "bench-secret"
BIN = Path(sys.executable).parent


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


def serve(app: str, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
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
        ],
        cwd=ROOT,
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


def ingest(
    redis: RedisServer, rounds: int, seconds: int, connections: int, threads: int
) -> dict[str, Any]:
    env = {"REDIS_URL": redis.url, "WEBHOOK_SIGNING_SECRET": SECRET, "WEBHOOK_KEY_PREFIX": "bench"}
    results: dict[str, list[dict[str, Any]]] = {"noop": [], "receiver": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for name, app in (("noop", "bench.noop_app:app"), ("receiver", "app.main:app")):
                bodies = Path(tmp) / f"{name}-{round_}.txt"
                # More bodies than any run can send: every request is a new event.
                signed_bodies(bodies, 60_000 * seconds // 10, f"{name}{round_}")
                port = free_port()
                server = serve(app, port, env)
                try:
                    wrk(port, bodies, 1, connections, threads)  # warm-up
                    results[name].append(wrk(port, bodies, seconds, connections, threads))
                finally:
                    server.terminate()
                    server.wait()
                Redis.from_url(redis.url).flushall()
    ratios = [
        r["rps"] / n["rps"] for r, n in zip(results["receiver"], results["noop"], strict=True)
    ]
    return {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        **{
            f"{name}_{key}": statistics.median(run[key] for run in runs)
            for name, runs in results.items()
            for key in ("rps", "p50_us", "p99_us")
        },
        "non_2xx": sum(
            run["non_2xx"] + run["socket_errors"] for runs in results.values() for run in runs
        ),
        "duplicates_answered": 0,
    }


def bench_settings(redis: RedisServer) -> Settings:
    return Settings.load(
        _env_file=None,
        redis_url=redis.url,
        webhook_signing_secret=SECRET,
        webhook_key_prefix="bench",
    )


def fill(settings: Settings, connection: Redis, count: int, tag: str) -> None:
    intake = SyncIntake(settings, connection)
    source = settings.sources["inbound"]
    for n in range(count):
        raw = json.dumps({"id": f"evt_{tag}_{n}", "type": "order.created"}).encode()
        intake.claim_and_enqueue(
            source, Delivery(f"evt_{tag}_{n}", "order.created"), raw, time.time()
        )


def drain(redis: RedisServer, rounds: int, events: int, mode: str = "fork") -> dict[str, Any]:
    settings = bench_settings(redis)
    connection = Redis.from_url(redis.url)
    worker_rates, loop_rates = [], []
    env = {
        **os.environ,
        "REDIS_URL": redis.url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_KEY_PREFIX": "bench",
        "WEBHOOK_WORKER_MODE": mode,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    }
    for round_ in range(rounds):
        connection.flushall()
        fill(settings, connection, events, f"d{round_}")
        # The worker as the Procfile starts it; --burst so it exits when the queue is empty.
        subprocess.run(
            ["webhooks", "worker", "--burst"],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        done = connection.hget("bench:stats:inbound", "ignored")
        assert int(done or 0) == events, f"worker settled {done} of {events}"
        worker_rates.append(events / busy_seconds(connection))

        connection.flushall()
        connection.rpush("bench:bare", *[f"job-{n}" for n in range(events)])
        out = subprocess.run(
            [sys.executable, "-c", BARE_LOOP, redis.url], check=True, capture_output=True, text=True
        ).stdout
        loop_rates.append(events / float(out))
    ratios = [w / b for w, b in zip(worker_rates, loop_rates, strict=True)]
    return {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "worker_eps": statistics.median(worker_rates),
        "bare_loop_eps": statistics.median(loop_rates),
    }


def busy_seconds(connection: Redis) -> float:
    """From the first job's start to the last one's end: the worker's start-up excluded."""
    from rq.utils import utcparse

    ids = connection.zrange("rq:finished:webhooks", 0, -1)
    with connection.pipeline(transaction=False) as pipe:
        for job_id in ids:
            pipe.hmget(b"rq:job:" + job_id, "started_at", "ended_at")
        stamps = pipe.execute()
    starts = [utcparse(s.decode()).timestamp() for s, _ in stamps if s]
    ends = [utcparse(e.decode()).timestamp() for _, e in stamps if e]
    return max(ends) - min(starts)


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


def memory(redis: RedisServer, count: int) -> dict[str, Any]:
    settings = bench_settings(redis)
    connection = Redis.from_url(redis.url)
    connection.flushall()
    base = int(connection.info("memory")["used_memory"])
    with connection.pipeline(transaction=False) as pipe:
        for n in range(count):
            pipe.set(f"bench:seen:inbound:evt_{n:012d}", "1", ex=86_400)
        pipe.execute()
    per_key = (int(connection.info("memory")["used_memory"]) - base) / count
    usage = int(connection.memory_usage(f"bench:seen:inbound:evt_{0:012d}") or 0)
    connection.flushall()
    base = int(connection.info("memory")["used_memory"])
    fill(settings, connection, count, "m")
    per_event = (int(connection.info("memory")["used_memory"]) - base) / count
    return {
        "dedupe_key_bytes": per_key,
        "dedupe_key_usage": usage,
        "accepted_event_bytes": per_event,
    }


def table(result: dict[str, Any]) -> str:
    i, d, m = result["ingest"], result["drain"], result["memory"]
    ds = result["drain_simple"]
    rows = [
        (
            "ingest: receiver / no-op endpoint",
            f"{i['ratio']:.2f}",
            f"{i['receiver_rps']:.0f} vs {i['noop_rps']:.0f} req/s",
            ">= 0.80",
        ),
        (
            "  latency p50 receiver / no-op",
            "",
            f"{i['receiver_p50_us'] / 1000:.2f} / {i['noop_p50_us'] / 1000:.2f} ms",
            "",
        ),
        (
            "  latency p99 receiver / no-op",
            "",
            f"{i['receiver_p99_us'] / 1000:.2f} / {i['noop_p99_us'] / 1000:.2f} ms",
            "",
        ),
        (
            "drain: worker (fork, default) / bare BRPOP loop",
            f"{d['ratio']:.3f}",
            f"{d['worker_eps']:.0f} vs {d['bare_loop_eps']:.0f} events/s",
            ">= 0.50",
        ),
        (
            "drain: worker (simple mode) / bare BRPOP loop",
            f"{ds['ratio']:.3f}",
            f"{ds['worker_eps']:.0f} vs {ds['bare_loop_eps']:.0f} events/s",
            ">= 0.50",
        ),
        ("memory: one dedupe key (used_memory)", "", f"{m['dedupe_key_bytes']:.0f} B", "<= 100 B"),
        ("memory: one dedupe key (MEMORY USAGE)", "", f"{m['dedupe_key_usage']:.0f} B", ""),
        (
            "memory: one accepted event (job, ledger, key)",
            "",
            f"{m['accepted_event_bytes']:.0f} B",
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measure':<{width}}  {'ratio':>6}  {'figures':<28}  target"]
    lines += [f"{a:<{width}}  {b:>6}  {c:<28}  {t}" for a, b, c, t in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--drain-events", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(Path(tmp) / "redis").start()
        try:
            result = {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "cpus": os.cpu_count(),
                "settings": vars(args) | {"json": None},
                "ingest": ingest(redis, args.rounds, args.seconds, args.connections, args.threads),
                "drain": drain(redis, args.rounds, args.drain_events, "fork"),
                "drain_simple": drain(redis, args.rounds, args.drain_events, "simple"),
                "memory": memory(redis, 10_000),
            }
        finally:
            redis.stop()
    print(table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
