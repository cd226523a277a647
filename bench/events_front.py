"""The Events page of every shard (the cluster dashboard's front) against a million ledger
records spread over three shards on three primaries.

Fills a local Redis Cluster (`tests/cluster/harness.py`: three primaries, each with a
replica) with N ledger records (default 1,000,000) as `bench/events_page.py` fills one
Redis, a third in each shard, every shard's chart counters, and 10,000 dead letters per
shard (an incident: what the page counts and a bulk action's confirmation groups);
then times each of the front's requests through its real Flask app (login, each shard read
at once, rendering) in this process: median and p95 of repeated runs. Beside them, as a
floor: the front's stylesheet behind the same login. The target is about 300 ms per page,
as on one Redis. Prints a table and writes JSON.

    .venv/bin/python bench/events_front.py [--records N] [--json bench/results/events_front.json]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.jobstate import EventStatus, JobMeta  # noqa: E402
from app.keys import Keys  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.shards import Shards  # noqa: E402
from bench.events_page import (  # noqa: E402
    AUTH,
    DAYS,
    SOURCES,
    TARGET_MS,
    older_cursor,
    page,
    timed,
)
from bench.events_page import fill as fill_one  # noqa: E402
from tests.cluster.harness import ShardedRedis  # noqa: E402
from workers.ops.dashboard_front import ShardDashboards, create_front  # noqa: E402

SHARDS = Shards(3)
HIGHEST = pickle.HIGHEST_PROTOCOL  # RQ's default serializer's


def fill(cluster: ShardedRedis, records: int, now: float) -> float:
    """Each shard's share of the records, and its chart's counters. The ids are not the ones
    the shards' hash would choose (each shard holds evt_0 to its share), which the page does
    not look at: it reads each shard's index as its own."""
    started = time.perf_counter()
    base = Keys("webhook", "webhooks")
    for shard in SHARDS:
        primary = cluster.primary_for_slot(SHARDS.slot(shard)).redis()
        prefix = base.sharded(SHARDS.tag(shard)).prefix
        share = records // SHARDS.count + (1 if shard < records % SHARDS.count else 0)
        print(f"  shard {shard}: {share:,} records under {prefix}", file=sys.stderr, flush=True)
        fill_one(primary, share, now, prefix=prefix, quiet=True)
    return time.perf_counter() - started


def dead_letters(cluster: ShardedRedis, per_shard: int, now: float) -> None:
    """Each shard's failed registry holds `per_shard` dead letters, as the worker leaves them
    (the job's meta, pickled as RQ's serializer does; scored by when each expires): what the
    page counts and the confirmation groups, in an incident."""
    base = Keys("webhook", "webhooks")
    for shard in SHARDS:
        primary = cluster.primary_for_slot(SHARDS.slot(shard)).redis()
        keys = base.sharded(SHARDS.tag(shard))
        with primary.pipeline(transaction=False) as pipe:
            for n in range(per_shard):
                failed = now - n
                meta = JobMeta(
                    source=SOURCES[n % len(SOURCES)],
                    event_id=f"evt_dead{n}",
                    type=f"type.{n % 20}",
                    received_at=failed - 60,
                    prefix=keys.prefix,
                    ledger_ttl=86_400,
                    attempts=6,
                    state=EventStatus.DEAD,
                    last_error=f"RuntimeError: downstream API answered {500 + n % 4}",
                    dead_at=failed,
                )
                job_id = f"inbound-dead{shard}x{n}"
                pipe.hset(keys.job(job_id), "meta", pickle.dumps(meta.to_meta(), HIGHEST))
                pipe.zadd(keys.failed, {job_id: failed + 7 * 86_400})
            pipe.execute()


def run(records: int, runs: int, dead: int = 10_000) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        # The page reads; persistence would only slow the million records' filling.
        cluster = ShardedRedis(Path(tmp) / "cluster", options={"appendonly": "no"}).start()
        try:
            return _measure(cluster, records, runs, dead)
        finally:
            cluster.stop()


def _measure(cluster: ShardedRedis, records: int, runs: int, dead: int) -> dict[str, Any]:
    now = time.time()
    print(f"filling {records:,} ledger records over {DAYS} days...", file=sys.stderr)
    fill_seconds = fill(cluster, records, now)
    dead_letters(cluster, dead, now)
    settings = Settings.load(
        _env_file=None,
        redis_cluster_nodes=cluster.seeds,
        webhook_shards=str(SHARDS.count),
        webhook_sources=",".join(f"{s}:hmac" for s in SOURCES),
        per_source={
            f"WEBHOOK_SECRET_{s.upper()}": "bench-secret-of-32-bytes-for-hmac" for s in SOURCES
        },
        rq_dashboard_username=AUTH[0],
        rq_dashboard_password=AUTH[1],
    )
    dashboards = ShardDashboards(SHARDS.count)
    client = create_front(settings, dashboards).test_client()
    try:
        at = older_cursor(client, 10, field="at")
        hour_ago = str(int(now - 3600))
        share = records // SHARDS.count
        measures = {
            "every shard: newest events, chart (auto), queue (as opened)": page(client, "/events"),
            "chart: the last hour, per minute": page(client, "/events", range="hour"),
            "chart: the last week, per hour": page(client, "/events", range="week"),
            "one source": page(client, "/events", source="github"),
            "status dead (reads records, bounded; counts dead letters)": page(
                client, "/events", status="dead"
            ),
            "a bulk requeue's confirmation (every shard's dead letters, by error)": page(
                client, "/events/bulk", verb="requeue", status="dead"
            ),
            "type prefix and status": page(client, "/events", type="type.1*", status="ignored"),
            "last hour": page(client, "/events", since=hour_ago),
            "event id lookup": page(client, "/events", id=f"evt_{share // 2}"),
            "11th page (a cursor per shard)": page(client, "/events", at=at),
            "the shard list (each primary pinged)": page(client, "/"),
        }
        floor = {"floor: stylesheet behind the login (no Redis)": page(client, "/style.css")}
        rows = {name: timed(call, runs) for name, call in {**floor, **measures}.items()}
    finally:
        dashboards.stop()
    print()
    print(f"{'request':<66}{'median':>11}{'p95':>11}   target {TARGET_MS:.0f} ms")
    for name, figures in rows.items():
        mark = "" if name in floor else ("ok" if figures["p95_ms"] <= TARGET_MS else "SLOW")
        print(f"{name:<66}{figures['median_ms']:>8} ms{figures['p95_ms']:>8} ms   {mark}")
    print(
        f"\n{records:,} records and {dead * SHARDS.count:,} dead letters over {SHARDS.count} "
        f"shards, filled in {fill_seconds:.0f} s"
    )
    return {
        "records": records,
        "shards": SHARDS.count,
        "dead_letters": dead * SHARDS.count,
        "target_ms": TARGET_MS,
        "baselines": {k: rows[k] for k in floor},
        "measures": {k: rows[k] for k in measures},
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--dead", type=int, default=10_000, help="dead letters per shard")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/events_front.json")
    args = parser.parse_args()
    results = run(args.records, args.runs, args.dead)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.json}")


if __name__ == "__main__":
    main()
