"""No-op tasks for the peers the bench compares against (Celery, dramatiq). Imported by their
workers in the bench's own venv for peers (`bench/peers.py`), never by the product.

Each task counts itself; the first records when draining began and the last when it ended,
in one Redis key, so the peers are timed as our worker is: first start to last end."""

from __future__ import annotations

import os
import threading
import time

import redis

URL = os.environ["BENCH_REDIS_URL"]
EVENTS = int(os.environ["BENCH_EVENTS"])
_lock = threading.Lock()
_seen = {"count": 0, "first": 0.0}


def _count() -> None:
    with _lock:
        _seen["count"] += 1
        if _seen["count"] == 1:
            _seen["first"] = time.time()
        if _seen["count"] == EVENTS:
            redis.Redis.from_url(URL).set("bench:peer:done", f"{_seen['first']} {time.time()}")


if os.environ.get("BENCH_PEER") == "celery":
    from celery import Celery

    celery_app = Celery("peer_tasks", broker=URL)
    celery_app.conf.update(worker_hijack_root_logger=False, broker_connection_retry=True)

    @celery_app.task(name="noop", ignore_result=True)
    def celery_noop(payload: str) -> None:
        _count()

else:
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    dramatiq.set_broker(RedisBroker(url=URL))

    @dramatiq.actor(max_retries=0, queue_name="bench")
    def dramatiq_noop(payload: str) -> None:
        _count()


def enqueue() -> None:
    payload = "x" * 1000
    for _ in range(EVENTS):
        if os.environ.get("BENCH_PEER") == "celery":
            celery_noop.delay(payload)
        else:
            dramatiq_noop.send(payload)


if __name__ == "__main__":
    enqueue()
