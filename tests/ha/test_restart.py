"""A plain Redis SIGKILLed under load and restarted: every acknowledged event runs within
15 s of Redis being back (it took 76 s: jobs caught between the queue and the worker waited
for a maintenance pass a whole interval later, and for heartbeats to run out)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from redis import Redis

from app.intake import SyncIntake
from app.keys import job_id_for
from app.providers import Delivery
from app.settings import Settings
from tests.conftest import Harness, event_body
from tests.ha.harness import wait_for
from tests.ha.test_failover import deliver, effects
from tests.processes import Stack
from workers.dev.redis_server import RedisServer
from workers.runtime import batch as batches
from workers.runtime.recovery import release_previous
from workers.runtime.run import build_worker
from workers.runtime.take import take

BACK_WITHIN = 15
EVENTS = 160


def test_after_a_redis_sigkill_every_acknowledged_event_runs_within_15_s_of_redis_back(
    make_redis: Callable[..., RedisServer],
    make_stack: Callable[..., Stack],
    record_property: Callable[[str, object], None],
) -> None:
    server = make_redis()
    stack = make_stack(server.url, WEBHOOK_HANDLERS="tests.ha.handlers")
    web = stack.start("web")
    worker = stack.start("worker")
    answers: dict[str, tuple[str, float] | None] = {}
    halfway = threading.Event()
    deadline = time.monotonic() + 60

    def one(n: int) -> None:
        answers[f"evt_{n}"] = deliver(web.url, f"evt_{n}", deadline, "order.slowish")
        if n == EVENTS // 2:
            halfway.set()

    with ThreadPoolExecutor(max_workers=8) as pool:
        running = pool.map(one, range(EVENTS))
        halfway.wait(30)
        server.kill()  # mid-burst: only what the AOF fsynced survives
        killed = time.time()
        # Longer than redis-py's own retries of a command (about 7 s), so that the worker
        # loses Redis and is rebuilt, as after any real outage.
        time.sleep(8)
        server.start()  # same port, same data
        back = time.time()
        list(running)
    redis = Redis.from_url(server.url)
    assert all(answers.values())
    wait_for(lambda: all(effects(redis, e) >= 1 for e in answers), 60, "every acknowledged event")
    applied = {m.decode(): t for m, t in redis.zrange("applied", 0, -1, withscores=True)}
    first = {e: min(t for m, t in applied.items() if m.startswith(f"{e}:")) for e in answers}
    acked_before = [e for e, a in answers.items() if a is not None and a[1] < killed]
    pending = [e for e in acked_before if first[e] > killed]
    assert pending, "the worker was behind when Redis died: jobs were queued, taken, running"
    last = max(first[e] for e in acked_before) - back
    record_property("acked_before_kill_all_handled_after_redis_back_s", round(last, 1))
    print(f"\nrestart: {len(pending)} acknowledged events pending at the kill, all handled")
    print(f"{last:.1f} s after Redis was back")
    assert last < BACK_WITHIN, f"the last was handled {last:.1f} s after Redis was back"
    output = worker.output()
    assert "redis reachable again" in output and "Traceback" not in output, output[-4000:]


def test_a_job_left_between_queue_and_worker_runs_within_seconds_not_a_maintenance_interval(
    make_redis: Callable[..., RedisServer],
    make_stack: Callable[..., Stack],
    make_settings: Callable[..., Settings],
) -> None:
    """A worker that took a job (RQ's intermediate queue) and died before beginning it:
    the job goes back once seen there twice, 5 s apart; the second sighting comes 5 s after
    the first, not at the next maintenance (30 s by default)."""
    server = make_redis()
    settings = make_settings(redis_url=server.url)
    redis = Redis.from_url(server.url)
    intake = SyncIntake(settings, redis)
    delivery = Delivery("evt_taken", "order.created")
    intake.claim_and_enqueue(settings.sources["inbound"], delivery, event_body("evt_taken"), 1.0)
    job = job_id_for("inbound", "evt_taken")
    assert redis.lmove("rq:queue:webhooks", "rq:queue:webhooks:intermediate") == job.encode()
    stack = make_stack(
        server.url, WEBHOOK_HANDLERS="tests.ha.handlers", WEBHOOK_MAINTENANCE_INTERVAL="30"
    )
    stack.start("worker")
    wait_for(lambda: effects(redis, "evt_taken") == 1, BACK_WITHIN, "the taken job to run")


def test_a_rebuilt_worker_takes_back_at_once_what_its_previous_incarnation_held(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    assert harness.event("evt_1").json()["status"] == "accepted"
    first = build_worker(harness.settings, connection=redis)
    queue = first.queues[0]
    batch = take(redis, queue, 10, None)
    assert batch is not None
    with redis.pipeline(transaction=False) as pipe:
        batches.begin_executions(pipe, first, batch, 15)
        pipe.execute()
    # It lost Redis mid-maintenance too: its lock is left behind.
    redis.set(queue.registry_cleaning_key, first.name, ex=60)

    second = build_worker(harness.settings, connection=redis)
    second.clean_registries()
    assert redis.llen(queue.key) == 0  # the heartbeat still runs, the lock is held

    assert release_previous(redis, queue, [first.name]) == 1
    second.clean_registries()
    assert redis.lrange(queue.key, 0, -1) == [job_id_for("inbound", "evt_1").encode()]
    assert not redis.exists(queue.registry_cleaning_key)
