"""The worker's stop does not wait on RQ's command listener: redis-py >= 8.2's
PubSubWorkerThread.stop() joins the thread, whose loop RQ runs with a 60 s wait; a loop that
went back to wait before the flag was cleared held the warm stop for a minute (seen: `webhooks
worker --burst` hung about one run in eight; honcho's SIGKILL ended a stopping worker)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from redis import Redis
from redis.client import PubSubWorkerThread
from redis.exceptions import ConnectionError as LinkLost

from app.settings import Settings
from workers.runtime.run import build_worker


def test_redis_pys_listener_thread_still_keeps_its_running_flag_in_an_event() -> None:
    """The internal `WebhookWorker.stop_listening` clears (docs/internals.md)."""
    thread = PubSubWorkerThread(pubsub=None, sleep_time=60)
    assert isinstance(thread._running, threading.Event) and thread._running.is_set()


def test_the_listener_is_told_to_end_before_rq_unsubscribes_and_has_ended_after(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    worker = build_worker(make_settings(), connection=redis)
    worker.subscribe()
    thread = worker.pubsub_thread
    running_when_unsubscribed: list[bool] = []
    unsubscribe = worker.pubsub.unsubscribe

    def spy(*args: object) -> object:
        running_when_unsubscribed.append(thread._running.is_set())
        return unsubscribe(*args)

    worker.pubsub.unsubscribe = spy
    stopping = threading.Thread(target=worker.unsubscribe)
    stopping.start()
    stopping.join(timeout=30)  # 60 s when the listener went back to its wait
    assert running_when_unsubscribed == [False]
    assert not stopping.is_alive() and not thread.is_alive()


def test_a_worker_rebuilt_after_an_outage_leaves_no_listener_behind(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    worker = build_worker(make_settings(), connection=redis)
    worker.subscribe()
    thread = worker.pubsub_thread
    worker.stop_listening()
    # What ends the loop's wait: its next message. A loop that woke on its own meanwhile
    # saw the flag cleared and closed the connection itself (EBADF here): ended all the same.
    with contextlib.suppress(LinkLost):
        worker.pubsub.unsubscribe()
    thread.join(timeout=30)
    assert not thread.is_alive()
