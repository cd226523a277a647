"""The dashboard's Events page against a million ledger records, beside its baselines.

Fills a throwaway redis-server (started with workers/dev/redis_server.py) with N ledger
records (default 1,000,000) spread over 30 days, three sources, realistic statuses and
~300-byte payloads, plus the chart's counters (a week of 15-minute ones, two hours of
1-minute ones: the page as opened then shows the week), then times each of the page's
requests through the real Flask app (login, guard, Redis, rendering) in this process:
median and p95 of repeated runs. Baselines, measured the same way, right beside them:
- floor: the page's stylesheet, behind the same login (Flask and the login, no Redis);
- naive: what `webhooks events list --since 24h` does (read every record of the window),
  the approach an index-less page would take.
The target is about 300 ms per page. Prints a table and writes JSON.

    .venv/bin/python bench/events_page.py [--records N] [--json bench/results/events_page.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis import Redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.intake import SyncIntake  # noqa: E402
from app.keys import Keys  # noqa: E402
from app.providers.base import Delivery  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.timeline import (  # noqa: E402
    FIELDS,
    INTERVAL,
    KEEP,
    KEEP_MINUTES,
    MINUTE,
    interval_of,
    minute_key,
    minute_of,
    timeline_key,
)
from workers.dev.redis_server import RedisServer  # noqa: E402
from workers.ops.dashboard import create_dashboard  # noqa: E402
from workers.ops.ledger import EventLedger  # noqa: E402

AUTH = ("bench", "bench-dashboard-password")
SOURCES = ("stripe", "github", "inbound")
TARGET_MS = 300.0
DAYS = 30
BATCH = 5_000

# Writes records [first, first + count) in one call: deterministic, no client round trips.
FILL = """
local prefix, first, count, now, span, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local total = tonumber(ARGV[7])
local sources = {'stripe', 'stripe', 'github', 'inbound'}
local statuses = {}
for i = 1, 960 do statuses[i] = 'done' end
for i = 961, 980 do statuses[i] = 'ignored' end
for i = 981, 985 do statuses[i] = 'dead' end
for i = 986, 990 do statuses[i] = 'retrying' end
for i = 991, 1000 do statuses[i] = 'queued' end
local pad = string.rep('x', 180)
for n = first, first + count - 1 do
  local h = (n * 2654435761) % 4294967296
  local source = sources[(h % 4) + 1]
  local status = statuses[(math.floor(h / 4) % 1000) + 1]
  local kind = 'type.' .. (math.floor(h / 4096) % 20)
  local id = 'evt_' .. n
  local received = now - span + ((n + 1) / total) * span
  local key = prefix .. ':event:' .. source .. ':' .. id
  local payload = '{"id":"' .. id .. '","type":"' .. kind .. '","data":{"pad":"' .. pad .. '"}}'
  redis.call('HSET', key, 'source', source, 'id', id, 'type', kind, 'status', status,
    'attempts', status == 'dead' and '6' or '1', 'received_at', received,
    'job_id', source .. '-' .. h, 'payload', payload, 'format', 'json',
    'settled_at', received + 1)
  if status == 'dead' then
    redis.call('HSET', key, 'last_error', 'RuntimeError: downstream API answered 502')
  end
  redis.call('EXPIRE', key, ttl)
  redis.call('ZADD', prefix .. ':events', received, key)
end
return count
"""


def fill(
    redis: Redis, records: int, now: float, prefix: str = "webhook", quiet: bool = False
) -> float:
    """`prefix`: our keys' (a shard's, on a cluster: `bench/events_front.py`)."""
    started = time.perf_counter()
    script = redis.register_script(FILL)
    span = DAYS * 86_400
    # Records are numbered oldest first: evt_<records - 1> is the newest.
    for first in range(0, records, BATCH):
        count = min(BATCH, records - first)
        script(args=[prefix, first, count, now, span, span + 86_400, records])
        done = first + count
        if not quiet and (done % 100_000 == 0 or done == records):
            print(f"  filled {done:,} records", file=sys.stderr, flush=True)
    with redis.pipeline(transaction=False) as pipe:
        for source in SOURCES:
            for n in range(KEEP // INTERVAL):
                key = timeline_key(prefix, source, interval_of(now) - n * INTERVAL)
                pipe.hset(key, mapping={name: (n * 7 + len(name)) % 40 for name in FIELDS})
            for n in range(KEEP_MINUTES // MINUTE):
                key = minute_key(prefix, source, minute_of(now) - n * MINUTE)
                pipe.hset(key, mapping={name: (n * 3 + len(name)) % 9 for name in FIELDS})
        pipe.execute()
    return time.perf_counter() - started


def timed(call: Callable[[], object], runs: int) -> dict[str, float]:
    for _ in range(2):
        call()  # warm: connections, compiled templates, Redis's script cache
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.95))], 1),
        "runs": runs,
    }


def page(client: Any, path: str, **query: str) -> Callable[[], object]:
    def get() -> object:
        response = client.get(path, query_string=query or None, auth=AUTH)
        assert response.status_code == 200, (path, query, response.status_code)
        return response.get_data()

    return get


def older_cursor(client: Any, hops: int, field: str = "after") -> str:
    """The cursor `hops` pages back, as the page's "older" link carries it in `field`
    (the front of a cluster's dashboard: `at`, a cursor per shard)."""
    import re
    from html import unescape
    from urllib.parse import parse_qs, urlsplit

    query: dict[str, str] = {}
    for _ in range(hops):
        html = client.get("/events", query_string=query or None, auth=AUTH).get_data(as_text=True)
        link = re.search(r'<a id="older" href="([^"]*)"', html)
        assert link is not None
        query = {field: parse_qs(urlsplit(unescape(link.group(1))).query)[field][0]}
    return query[field]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/events_page.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(Path(directory), options={"appendonly": "no"}).start()
        try:
            results = run(server, args.records, args.runs)
        finally:
            server.stop()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.json}")


def run(server: RedisServer, records: int, runs: int) -> dict[str, Any]:
    redis = Redis.from_url(server.url)
    now = time.time()
    print(f"filling {records:,} ledger records over {DAYS} days...", file=sys.stderr)
    fill_seconds = fill(redis, records, now)
    settings = Settings.load(
        _env_file=None,
        redis_url=server.url,
        webhook_sources=",".join(f"{s}:hmac" for s in SOURCES),
        per_source={
            f"WEBHOOK_SECRET_{s.upper()}": "bench-secret-of-32-bytes-for-hmac" for s in SOURCES
        },
        rq_dashboard_username=AUTH[0],
        rq_dashboard_password=AUTH[1],
    )
    client = create_dashboard(settings).test_client()
    # One event received for real (job, meta, record), so its page reads a job too.
    delivery = Delivery(event_id="evt_real", event_type="type.1")
    payload = json.dumps({"id": "evt_real", "type": "type.1", "data": {"amount": 4200}}).encode()
    SyncIntake(settings, redis).claim_and_enqueue(
        settings.sources["inbound"], delivery, payload, time.time()
    )
    cursor = older_cursor(client, 10)
    hour_ago = str(int(now - 3600))
    measures: dict[str, Callable[[], object]] = {
        "newest events, chart (auto: week), queue (the page as opened)": page(client, "/events"),
        "chart: the last hour, per minute": page(client, "/events", range="hour"),
        "chart: the last day, per 15 minutes": page(client, "/events", range="day"),
        "chart: the last week, per hour": page(client, "/events", range="week"),
        "one source": page(client, "/events", source="github"),
        "status dead (reads records, bounded)": page(client, "/events", status="dead"),
        "one type": page(client, "/events", type="type.7"),
        "type prefix and status": page(client, "/events", type="type.1*", status="ignored"),
        "last hour": page(client, "/events", since=hour_ago),
        "event id lookup": page(client, "/events", id=f"evt_{records // 2}"),
        "11th page (cursor)": page(client, "/events", after=cursor),
        "an event's page (record, job, attempts)": page(
            client, "/events/event", source="inbound", id="evt_real"
        ),
    }
    ledger = EventLedger(Keys("webhook", "webhooks"), redis)
    baselines: dict[str, Callable[[], object]] = {
        "floor: stylesheet behind the login (no Redis)": page(client, "/events/style.css"),
        "naive: read every record of the last 24 h (events list --since)": lambda: ledger.find(
            since=now - 86_400
        ),
    }
    rows: dict[str, Any] = {}
    for name, call in {**baselines, **measures}.items():
        rows[name] = timed(call, runs if not name.startswith("naive") else max(3, runs // 5))
    in_day = int(redis.zcount("webhook:events", now - 86_400, "+inf"))
    used = int(redis.info("memory")["used_memory"])
    print()
    print(f"{'request':<66}{'median':>11}{'p95':>11}   target {TARGET_MS:.0f} ms")
    for name, figures in rows.items():
        mark = "" if name in baselines else ("ok" if figures["p95_ms"] <= TARGET_MS else "SLOW")
        print(f"{name:<66}{figures['median_ms']:>8} ms{figures['p95_ms']:>8} ms   {mark}")
    print(
        f"\n{records:,} records ({in_day:,} in the last 24 h), filled in {fill_seconds:.0f} s; "
        f"Redis used_memory {used / 2**20:.0f} MiB"
    )
    return {
        "records": records,
        "records_last_24h": in_day,
        "redis_used_memory_bytes": used,
        "target_ms": TARGET_MS,
        "baselines": {k: rows[k] for k in baselines},
        "measures": {k: rows[k] for k in measures},
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


if __name__ == "__main__":
    main()
