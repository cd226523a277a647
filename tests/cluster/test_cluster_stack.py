"""The Procfile's receiver and worker on a Redis Cluster (three primaries, three replicas),
as a deployment runs them with REDIS_CLUSTER_NODES: two receivers, each event delivered to
both twice in shuffled order, spread over every primary, accepted once and handled once; a
primary killed mid-run with WEBHOOK_REPLICA_ACKS=1 loses
no acknowledged event, its shard's workers follow the promoted replica without a restart,
and a redelivery is never accepted again; a shard's slot migrated under load loses and
duplicates nothing; failed attempts are retried by each shard's scheduler and dead-lettered
in their shard, where `webhooks dead` lists, shows and requeues them."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from redis import Redis

from app.keys import Keys, job_id_for
from app.shards import Shards
from tests.cluster.harness import ShardedRedis
from tests.cluster.test_cluster_commands import webhooks
from tests.conftest import event_body, sign
from tests.processes import Stack, effects, wait_until
from tests.promql import served, unserved
from tests.test_alert_rules import rules
from tests.test_grafana_dashboard import expressions
from workers.dev.redis_server import RedisServer
from workers.runtime.entity_versions import ENTITY

# The events of the two-receiver test: 600 in `make test`; the 3,000 by hand
# (`CLUSTER_EVENTS=3000 .venv/bin/pytest tests/cluster/test_cluster_stack.py -k two`).
EVENTS = int(os.environ.get("CLUSTER_EVENTS", "600"))
SHARDS = Shards(3)  # a shard per primary: the fewest worker processes that show them all
KEYS = Keys("webhook", "webhooks")


def cluster_stack(
    make_stack: Callable[..., Stack],
    cluster: ShardedRedis,
    effects_at: RedisServer,
    **env: str,
) -> tuple[Stack, Any]:
    """The receiver and `webhooks worker` (a process per shard) on the cluster; the test
    handlers count their effects on another Redis."""
    stack = make_stack(
        effects_at.url,  # REDIS_URL: not used once REDIS_CLUSTER_NODES is set
        REDIS_CLUSTER_NODES=cluster.seeds,
        WEBHOOK_SHARDS=str(SHARDS.count),
        EFFECTS_REDIS_URL=effects_at.url,
        **env,
    )
    web = stack.start("web")
    stack.start("worker")
    return stack, web


class Deliveries:
    """Events sent from 8 threads; the ids answered `accepted`, and every answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.accepted: list[str] = []
        self.answers: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        self.local = threading.local()
        self.clients: list[httpx.Client] = []

    def one(self, event_id: str, url: str | None = None) -> None:
        # A client per thread, kept: a new one per request costs more than the request.
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = httpx.Client(timeout=10)
            with self.lock:
                self.clients.append(client)
        body = event_body(event_id, "order.created")
        try:
            response = client.post(
                f"{url or self.url}/webhooks/inbound",
                content=body,
                headers={"X-Signature-256": sign(body)},
            )
        except httpx.HTTPError:
            status, accepted = 0, False
        else:
            status = response.status_code
            accepted = status == 200 and response.json()["status"] == "accepted"
        with self.lock:
            self.answers.setdefault(event_id, []).append(status)
            if accepted:
                self.accepted.append(event_id)

    def all(self, event_ids: list[str], during: Callable[[int], None] | None = None) -> None:
        def deliver(n_id: tuple[int, str]) -> None:
            n, event_id = n_id
            if during is not None:
                during(n)
            self.one(event_id)

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(deliver, enumerate(event_ids)))
        self.close()

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.clients.clear()


def owner(cluster: ShardedRedis, event_id: str) -> Any:
    """The primary that holds an event of `inbound`."""
    return cluster.primary_for_slot(SHARDS.slot(SHARDS.of("inbound", event_id)))


def handled_once(redis: Redis, event_ids: list[str]) -> bool:
    return all(effects(redis, e) == 1 for e in event_ids)


def test_two_receivers_and_the_workers_on_a_cluster_accept_and_handle_each_event_once(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    stack, web = cluster_stack(make_stack, cluster, redis_server)
    other = stack.start("web")
    events = [f"evt_{n}" for n in range(EVENTS)]
    deliveries = [(url, e) for e in events for url in (web.url, other.url) * 2]
    random.Random(39).shuffle(deliveries)
    sent = Deliveries(web.url)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda d: sent.one(d[1], d[0]), deliveries))
    sent.close()

    assert sorted(sent.accepted) == sorted(events)
    assert all(answers == [200] * 4 for answers in sent.answers.values())
    wait_until(lambda: handled_once(redis, events), 60 + EVENTS / 20, "every event handled")
    assert all(primary.redis().dbsize() > 0 for primary in cluster.primaries())
    client = cluster.client()
    queues = [KEYS.sharded(SHARDS.tag(shard)).queue for shard in SHARDS]
    wait_until(lambda: all(client.llen(q) == 0 for q in queues), 20, "empty queues")
    assert handled_once(redis, events)
    # /metrics reads every shard, each labelled: a worker and a scheduler each, nothing
    # waiting; and every series the alert rules and the Grafana dashboard read is served.
    wanted = {
        f'{name}{{shard="{shard}"}}': value
        for shard in SHARDS
        for name, value in (
            ("webhooks_queue_depth", 0.0),
            ("webhooks_workers", 1.0),
            ("webhooks_scheduler_up", 1.0),
            ("webhooks_redis_up", 1.0),
        )
    }
    wait_until(lambda: metrics(web.url, wanted) == wanted, 30, "every shard in /metrics")
    series = served(httpx.get(f"{web.url}/metrics", timeout=5).text)
    missing = {
        **{f"rule {r['alert']}": unserved(r["expr"], series) for r in rules()},
        **{f"panel query {e}": unserved(e, series) for e in expressions()},
    }
    assert {where: what for where, what in missing.items() if what} == {}


def metrics(url: str, names: dict[str, float]) -> dict[str, float]:
    lines = httpx.get(f"{url}/metrics", timeout=5).text.splitlines()
    return {
        name: float(line.split()[1])
        for line in lines
        for name in names
        if line.startswith(name + " ")
    }


def test_a_primary_killed_mid_run_loses_no_acknowledged_event_and_its_workers_follow(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    stack, web = cluster_stack(make_stack, cluster, redis_server, WEBHOOK_REPLICA_ACKS="1")
    worker = next(p for p in stack.processes if p.name == "worker")
    wait_until(lambda: len(worker.children()) == SHARDS.count, 30, "a process per shard")
    shard_workers = worker.children()
    victim = cluster.primary_for_slot(SHARDS.slot(0))
    events = [f"evt_{n}" for n in range(400)]
    sent = Deliveries(web.url)
    killed = threading.Event()

    def kill_at(n: int) -> None:
        if n == 150 and not killed.is_set():
            killed.set()
            cluster.kill_primary(victim)

    sent.all(events, during=kill_at)
    heir = cluster.wait_promoted(victim)

    assert killed.is_set() and len(sent.accepted) >= 150
    assert victim in cluster.nodes and heir.role == "primary"
    wait_until(lambda: handled_once(redis, sent.accepted), 90, "every acknowledged event")
    # The shard's workers reached the new primary in their own processes.
    assert worker.children() == shard_workers
    again = Deliveries(web.url)
    again.all(sent.accepted)
    assert again.accepted == []
    # The heir has no replica of its own until the dead node returns: with
    # WEBHOOK_REPLICA_ACKS=1 its shards answer 503 (not replicated), duplicates too.
    unreplicated = {e for e, answers in again.answers.items() if answers != [200]}
    on_heir = {e for e in sent.accepted if owner(cluster, e) is heir}
    assert unreplicated == on_heir and on_heir
    assert handled_once(redis, sent.accepted)


def test_a_shards_slot_migrated_under_load_loses_and_duplicates_nothing(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    _, web = cluster_stack(make_stack, cluster, redis_server)
    slot = SHARDS.slot(1)
    owner = cluster.primary_for_slot(slot)
    target = next(p for p in cluster.primaries() if p is not owner)
    events = [f"evt_{n}" for n in range(400)]
    sent = Deliveries(web.url)
    moved = threading.Event()

    def migrate_at(n: int) -> None:
        if n == 150 and not moved.is_set():
            moved.set()
            cluster.migrate_slot(slot, target)

    sent.all(events, during=migrate_at)
    assert cluster.primary_for_slot(slot) is target

    # What was not accepted was answered 503 (the provider retries): retried, every event
    # is accepted exactly once, and handled exactly once.
    refused = sorted(set(events) - set(sent.accepted))
    assert all(set(sent.answers[e]) <= {200, 503} for e in events)
    retried = Deliveries(web.url)
    retried.all(refused + sent.accepted)
    assert sorted(sent.accepted + retried.accepted) == sorted(events)
    wait_until(lambda: handled_once(redis, events), 90, "every event handled once")


def test_on_a_cluster_a_failed_attempt_is_retried_by_its_shards_scheduler_and_dead_lettered(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
    tmp_path: Path,
) -> None:
    cluster = make_sharded_redis()
    _, web = cluster_stack(make_stack, cluster, redis_server, WEBHOOK_MAX_RETRIES="1")
    retried = [f"evt_r{n}" for n in range(8)]
    # Two of each shard, so that every shard's registry is shown.
    candidates = [f"evt_d{n}" for n in range(200)]
    dead = [e for s in SHARDS for e in [c for c in candidates if SHARDS.of("inbound", c) == s][:2]]
    for event_id in dead:
        redis.set(f"fail:{event_id}", 1)
    for event_id in retried:
        assert send_one(web.url, event_id, "order.fails_once") == 200
    for event_id in dead:
        assert send_one(web.url, event_id, "order.flaky") == 200

    # Each shard's scheduler put its retries back: the second attempt ran, once.
    wait_until(lambda: all(effects(redis, e) == 2 for e in retried), 60, "the retries")
    client = cluster.client()

    def dead_letters() -> set[str]:
        found: set[str] = set()
        for shard in SHARDS:
            failed = KEYS.sharded(SHARDS.tag(shard)).failed
            found |= {m.decode() for m in client.zrange(failed, 0, -1)}
        return found

    wait_until(lambda: dead_letters() == {job_id_for("inbound", e) for e in dead}, 60, "dead")
    assert all(effects(redis, e) == 2 for e in dead + retried)

    # The operator, from a second terminal with the cluster's variables: every shard's
    # letters in one list, one shown by its event id, one purged, the rest requeued and
    # handled once more.
    listed = webhooks(tmp_path, cluster.seeds, "dead", "list", "--json", shards=SHARDS.count)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(row["event_id"] for row in rows) == sorted(dead)
    shown = webhooks(tmp_path, cluster.seeds, "dead", "show", dead[-1], shards=SHARDS.count)
    assert shown.returncode == 0 and f"event_id:     {dead[-1]}" in shown.stdout, shown.stderr
    # The ledger of every shard: one list, newest first; an event found in its shard.
    listed = webhooks(tmp_path, cluster.seeds, "events", "list", "--json", shards=SHARDS.count)
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(row["id"] for row in rows) == sorted(dead + retried), listed.stderr
    assert [row["received_at"] for row in rows] == sorted(
        (row["received_at"] for row in rows), reverse=True
    )
    dead_ones = webhooks(
        tmp_path, cluster.seeds, "events", "list", "--status", "dead", shards=SHARDS.count
    )
    assert dead_ones.stdout.splitlines()[-1] == f"{len(dead)} events", dead_ones.stderr
    by_id = webhooks(
        tmp_path, cluster.seeds, "events", "list", "--id", dead[1], "--json", shards=SHARDS.count
    )
    assert [json.loads(line)["id"] for line in by_id.stdout.splitlines()] == [dead[1]]
    one = webhooks(
        tmp_path,
        cluster.seeds,
        "events",
        "show",
        f"inbound/{dead[2]}",
        "--json",
        shards=SHARDS.count,
    )
    assert json.loads(one.stdout)["status"] == "dead", one.stderr
    purged = webhooks(tmp_path, cluster.seeds, "dead", "purge", dead[0], shards=SHARDS.count)
    assert purged.stdout.strip() == "purged 1 dead letter", purged.stderr
    for event_id in dead:
        redis.delete(f"fail:{event_id}")
    requeued = webhooks(tmp_path, cluster.seeds, "dead", "requeue", "--all", shards=SHARDS.count)
    assert requeued.stdout.strip() == f"requeued {len(dead) - 1} dead letters", requeued.stderr
    wait_until(lambda: all(effects(redis, e) == 3 for e in dead[1:]), 60, "the requeued events")
    assert dead_letters() == set() and effects(redis, dead[0]) == 2
    assert not client.exists(
        KEYS.sharded(SHARDS.tag(SHARDS.of("inbound", dead[0]))).job(job_id_for("inbound", dead[0]))
    )

    # Every shard's ledger replayed: the settled events run again, each once more.
    settled = retried + dead[1:]
    before = {e: effects(redis, e) for e in settled}
    replayed = webhooks(
        tmp_path,
        cluster.seeds,
        "replay",
        "ledger",
        "inbound",
        "--since",
        "0",
        "--status",
        "done",
        "--all-handlers",
        "--json",
        shards=SHARDS.count,
    )
    counts = json.loads(replayed.stdout)
    assert (counts["fetched"], counts["new"]) == (len(settled), len(settled)), replayed.stderr
    wait_until(lambda: all(effects(redis, e) == before[e] + 1 for e in settled), 60, "the replays")


def send_one(url: str, event_id: str, event_type: str) -> int:
    body = event_body(event_id, event_type)
    return httpx.post(
        f"{url}/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)}
    ).status_code


def test_metrics_name_the_shards_of_a_stopped_primary_and_serve_the_others(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
) -> None:
    # The other primaries keep serving their slots while one and its replica are gone.
    cluster = make_sharded_redis(options={"cluster-require-full-coverage": "no"})
    stack = make_stack(
        redis_server.url, REDIS_CLUSTER_NODES=cluster.seeds, WEBHOOK_SHARDS=str(SHARDS.count)
    )
    web = stack.start("web")
    stopped = cluster.primary_for_slot(SHARDS.slot(1))
    cluster.stop_with_replicas(stopped)
    up = {f'webhooks_redis_up{{shard="{shard}"}}': float(shard != 1) for shard in SHARDS}
    wait_until(lambda: metrics(web.url, up) == up, 30, "shard 1 down on /metrics")
    depths = metrics(web.url, {f'webhooks_queue_depth{{shard="{s}"}}': 0.0 for s in SHARDS})
    assert set(depths) == {'webhooks_queue_depth{shard="0"}', 'webhooks_queue_depth{shard="2"}'}


def test_the_version_guard_holds_for_an_entity_whose_events_land_in_every_shard(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    _, web = cluster_stack(make_stack, cluster, redis_server)
    # Versions 1-4 of one subscription, each an event of another shard where it can be.
    ids = {
        v: next(
            f"evt_v{v}_{n}" for n in range(100) if SHARDS.of("inbound", f"evt_v{v}_{n}") == v % 3
        )
        for v in range(1, 5)
    }
    assert len({SHARDS.of("inbound", e) for e in ids.values()}) == 3
    client = cluster.client()

    def send_version(version: int) -> None:
        body = event_body(
            ids[version],
            "subscription.updated",
            data={"object": {"id": "sub_1", "version": version}},
        )
        response = httpx.post(
            f"{web.url}/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)}
        )
        assert response.status_code == 200

    def status(version: int) -> str:
        at = KEYS.sharded(SHARDS.tag(SHARDS.of("inbound", ids[version])))
        return (client.hget(at.event("inbound", ids[version]), "status") or b"").decode()

    def applied() -> list[int]:
        return [int(v) for v in redis.lrange("applied:sub_1", 0, -1)]

    send_version(3)
    wait_until(lambda: applied() == [3], 30, "version 3 applied")
    send_version(1)
    send_version(2)
    wait_until(lambda: status(1) == status(2) == "stale", 30, "versions 1 and 2 stale")
    send_version(4)
    wait_until(lambda: applied() == [3, 4], 30, "version 4 applied")
    # One key for the entity, in the shard its id chooses, whatever its events' shards.
    held = [
        shard
        for shard in SHARDS
        if client.exists(KEYS.sharded(SHARDS.tag(shard)).version("inbound", "sub_1"))
    ]
    assert held == [SHARDS.of("inbound", ENTITY + "sub_1")]


def descendants(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    children = [int(child) for child in found.stdout.split()]
    return children + [grand for child in children for grand in descendants(child)]


def test_a_shards_worker_killed_mid_job_is_started_again_and_its_job_recovered(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    stack, web = cluster_stack(make_stack, cluster, redis_server)
    worker = stack.processes[-1]
    event_id = next(f"evt_k{n}" for n in range(100) if SHARDS.of("inbound", f"evt_k{n}") == 2)
    redis.set(f"sleep:{event_id}", 120)
    assert send_one(web.url, event_id, "order.slow") == 200
    wait_until(lambda: redis.get(f"starts:{event_id}") == b"1", 30, "the slow job to start")
    redis.set(f"sleep:{event_id}", 0.1)  # its retry returns at once
    shard_2 = [
        pid
        for pid in descendants(worker.popen.pid)
        if b"--shards=2" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    below = {pid for top in shard_2 for pid in descendants(top)}  # its scheduler, its batch
    [process] = [pid for pid in shard_2 if pid not in below]
    for pid in [process, *descendants(process)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    # Its supervisor starts it again; the job comes back within the bound of one Redis (a
    # killed worker's heartbeat expires after 15 s, maintenance runs every 10 s).
    wait_until(lambda: effects(redis, event_id) == 1, 90, "the recovered job")
    record = KEYS.sharded(SHARDS.tag(2)).event("inbound", event_id)
    assert cluster.client().hget(record, "attempts") == b"2"
    assert "shard worker ended by itself; starting it again" in worker.output()


def test_worker_processes_given_shard_ranges_leave_no_shard_without_a_worker(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
) -> None:
    # Two machines' worth: `--shards 0-1` on one, `--shards 2` on the other.
    cluster = make_sharded_redis()
    stack = make_stack(
        redis_server.url, REDIS_CLUSTER_NODES=cluster.seeds, WEBHOOK_SHARDS=str(SHARDS.count)
    )
    web = stack.start("web")
    stack.start("worker", extra_args="--shards 0-1")
    stack.start("worker", extra_args="--shards 2")
    each = {f'webhooks_workers{{shard="{shard}"}}': 1.0 for shard in SHARDS}
    wait_until(lambda: metrics(web.url, each) == each, 30, "a worker on every shard")
    assert metrics(web.url, each) == each  # and no more, once both have started
