"""`make bench`: the receiver and the worker measured against baselines run side by side.

This machine is shared and noisy, so every figure is a ratio to a baseline measured the
same way, on the same Redis (appendfsync always), right beside it, and the median of the
rounds' ratios is reported:
- ingest (`bench/ingest.py`): the receiver over a no-op FastAPI endpoint, under wrk;
- drain (`bench/drain.py`): the worker over a bare BRPOP loop, in both modes, with no
  handler and with one, and two worker processes over one; `--only drain-ab --against DIR`
  compares the one-handler drain with another checkout's (a baseline commit's worktree);
- peers (`bench/peers.py`): Celery and dramatiq draining the same jobs, over the same loop;
- memory (`bench/memory.py`): Redis bytes per dedupe key and per accepted event;
- the Events page (`bench/events_page.py`) over a million ledger records, and the cluster
  dashboard's Events page of every shard over as many in three shards (`bench/events_front.py`).
- replica acks (`bench/replicas.py`): the receiver at WEBHOOK_REPLICA_ACKS=1 over 0, on a
  primary and a replica of its own.
- tracing (`bench/tracing.py`): ingest and the one-handler drain with tracing on (exporting
  to a no-op collector) over off, and off over off (the noise band), alternating.
- cluster (`bench/cluster.py`): the receiver on a 3-primary Redis Cluster over one Redis,
  alternating, and the Redis CPU per claim on each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster import cluster_ingest
from bench.drain import ab, drain, scaling
from bench.events_front import run as events_front
from bench.events_page import run as events_page
from bench.ingest import ingest, ingest_ab
from bench.memory import memory
from bench.peers import peers
from bench.race import race
from bench.replicas import replica_acks
from bench.table import table
from bench.tracing import tracing
from workers.dev.redis_server import RedisServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--drain-events", type=int, default=5000)
    parser.add_argument("--skip-peers", action="store_true", help="Do not install or run them.")
    parser.add_argument("--events-records", type=int, default=1_000_000)
    parser.add_argument(
        "--only",
        choices=["drain", "replicas", "drain-ab", "ingest-ab", "tracing", "cluster"],
        help="Run one measure alone (its figures only): drain = the bare loop, both modes and"
        " dramatiq-8 round by round, and the Redis commands per settled event;"
        " replicas = WEBHOOK_REPLICA_ACKS=1 vs 0;"
        " drain-ab = the one-handler drain of this checkout over --against's, both modes;"
        " ingest-ab = this checkout's receiver over --against's, on one Redis;"
        " tracing = ingest and the one-handler drain with tracing on vs off, and off vs off;"
        " cluster = the receiver on a 3-primary cluster vs one Redis.",
    )
    parser.add_argument(
        "--against", type=Path, help="drain-ab's baseline: a checkout with its own .venv."
    )
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    args = parser.parse_args()
    if args.only == "drain-ab":
        if args.against is None or not (args.against / ".venv" / "bin" / "webhooks").exists():
            sys.exit("drain-ab needs --against DIR: a checkout with its own .venv (make install)")
        with tempfile.TemporaryDirectory() as tmp:
            redis = RedisServer(Path(tmp) / "redis").start()
            try:
                url, events = redis.url, args.drain_events
                figures = {
                    f"drain_ab_{mode}": ab(url, args.rounds, events, mode, args.against.resolve())
                    for mode in ("fork", "simple")
                }
            finally:
                redis.stop()
        print(json.dumps(figures, indent=2))
        return
    if args.only == "drain":
        with tempfile.TemporaryDirectory() as tmp:
            redis = RedisServer(Path(tmp) / "redis").start()
            try:
                raced = {"race": race(redis.url, args.rounds, args.drain_events)}
            finally:
                redis.stop()
        print(json.dumps(raced, indent=2))
        print(table(raced))
        return
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    load = (args.rounds, args.seconds, args.connections, args.threads)
    if args.only == "ingest-ab":
        if args.against is None or not (args.against / "app" / "main.py").exists():
            sys.exit("ingest-ab needs --against DIR: another checkout (a baseline's worktree)")
        with tempfile.TemporaryDirectory() as tmp:
            redis = RedisServer(Path(tmp) / "redis").start()
            try:
                figures = ingest_ab(redis.url, *load, args.against.resolve())
            finally:
                redis.stop()
        print(json.dumps(figures, indent=2))
        return
    if args.only == "replicas":
        print(table({"replicas": replica_acks(*load)}))
        return
    if args.only == "cluster":
        print(table({"cluster": cluster_ingest(*load)}))
        return
    if args.only == "tracing":
        with tempfile.TemporaryDirectory() as tmp:
            redis = RedisServer(Path(tmp) / "redis").start()
            try:
                alone = {"tracing": tracing(redis.url, *load, args.drain_events)}
            finally:
                redis.stop()
        print(table(alone))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(alone, indent=2) + "\n")
        return
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(Path(tmp) / "redis").start()
        try:
            url, rounds, events = redis.url, args.rounds, args.drain_events
            result: dict[str, Any] = {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "cpus": os.cpu_count(),
                "settings": vars(args) | {"json": None},
                "ingest": ingest(url, rounds, args.seconds, args.connections, args.threads),
                "drain": drain(url, rounds, events, "fork"),
                "drain_simple": drain(url, rounds, events, "simple"),
                "drain_handler": drain(url, rounds, events, "fork", handler=True),
                "scaling": scaling(url, rounds, events),
                "peers": {} if args.skip_peers else peers(url, rounds, events),
                "race": race(url, rounds, events),
                "memory": memory(url, 10_000),
                "tracing": tracing(url, *load, events),
            }
            result["replicas"] = replica_acks(*load)
            result["cluster"] = cluster_ingest(*load)
        finally:
            redis.stop()
        # The page reads; persistence would only slow the million records' filling.
        pages = RedisServer(Path(tmp) / "pages", options={"appendonly": "no"}).start()
        try:
            result["events_page"] = events_page(pages, args.events_records, 15)
        finally:
            pages.stop()
        result["events_front"] = events_front(args.events_records, 15)
    print(table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
