"""The worker's heartbeats and state (`workers/runtime/beats.py`): RQ's writes, in one round
trip where RQ sends three, and none for a beat that repeats one just sent."""

from __future__ import annotations

from collections.abc import Callable

from redis import Redis
from rq.worker import WorkerStatus

from app.settings import Settings
from workers.runtime.run import build_worker


def test_a_heartbeat_is_rqs_writes_in_one_round_trip_and_a_repeat_is_left_out(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    worker = build_worker(make_settings(), connection=redis)
    worker.register_birth()
    sent: list[int] = []
    original = redis.connection_pool.get_connection

    def counting(*args: object, **kwargs: object) -> object:
        sent.append(1)  # one per round trip: a command, or a pipeline
        return original(*args, **kwargs)

    redis.connection_pool.get_connection = counting  # type: ignore[method-assign]

    def round_trips(beat: Callable[[], None]) -> int:
        before = len(sent)
        beat()
        return len(sent) - before

    redis.expire(worker.key, 1)
    assert round_trips(worker.heartbeat) == 1  # RQ's three writes at once
    assert redis.ttl(worker.key) > 60 and redis.hget(worker.key, "last_heartbeat")
    assert round_trips(worker.heartbeat) == 0  # within a second of the last: nothing sent
    assert round_trips(lambda: worker.heartbeat(timeout=600)) == 1  # its own expiry: sent
    assert redis.ttl(worker.key) > 500


def test_the_idle_beat_says_idle_and_alive_at_once(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    worker = build_worker(make_settings(), connection=redis)
    worker.register_birth()
    worker.set_state(WorkerStatus.BUSY)
    redis.expire(worker.key, 1)
    worker.idle()
    assert redis.hget(worker.key, "state") == b"idle"
    assert redis.ttl(worker.key) > 60
