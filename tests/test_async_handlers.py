"""Async handlers run on one event loop per process, kept from one event to the next: through
the real worker in both of its modes (in fork mode, the batch child's own loop), a client a
handler module keeps at module level serves every event, and a timed-out handler is
cancelled without costing the next event its loop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from uuid import uuid4

import pytest
import redis.asyncio as aioredis
from redis import Redis
from rq.job import Job, JobStatus
from rq.timeouts import JobTimeoutException

from app.keys import job_id_for
from tests.conftest import Harness
from workers import Event, handler, handler_loop
from workers.dev.redis_server import RedisServer
from workers.runtime.attempt import run_handler

MODES = ["fork", "simple"]

# The handlers' module-level client, as an async library advises keeping one: made by the
# `module_client` fixture on the test's Redis, connected at its first command.
CLIENT: aioredis.Redis | None = None


@pytest.fixture
def module_client(redis_server: RedisServer) -> Iterator[aioredis.Redis]:
    global CLIENT
    CLIENT = aioredis.Redis.from_url(redis_server.url)
    yield CLIENT
    # On the loop its connections were made on (none in this process, in fork mode).
    handler_loop.run(CLIENT.aclose())
    CLIENT = None


def client() -> aioredis.Redis:
    assert CLIENT is not None
    return CLIENT


def loop_mark() -> str:
    """A name kept on the running loop: two equal marks are one loop (an `id` can be reused
    by a loop made after another was freed)."""
    loop = asyncio.get_running_loop()
    if not hasattr(loop, "test_mark"):
        loop.test_mark = uuid4().hex  # type: ignore[attr-defined]
    return str(loop.test_mark)  # type: ignore[attr-defined]


def an_event(event_id: str = "evt_1") -> Event:
    return Event("inbound", event_id, "order.created", {}, b"{}", {}, datetime.now(UTC), 1)


def statuses(redis: Redis, *event_ids: str) -> dict[str, JobStatus | None]:
    return {
        e: Job.fetch(job_id_for("inbound", e), connection=redis).get_status() for e in event_ids
    }


def logged(redis: Redis, key: str = "log") -> list[str]:
    return [entry.decode() for entry in redis.lrange(key, 0, -1)]


@pytest.mark.parametrize("mode", MODES)
def test_a_module_level_asyncio_client_serves_every_event(
    make_harness: Callable[..., Harness],
    redis: Redis,
    module_client: aioredis.Redis,
    mode: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_max_retries=0)

    @handler("inbound", "order.created")
    async def record(event: Event) -> None:
        await client().rpush("log", event.id)

    events = ["a1", "a2", "a3", "a4"]
    for event_id in events:
        harness.event(event_id)
    harness.drain()
    assert statuses(redis, *events) == dict.fromkeys(events, JobStatus.FINISHED)
    assert logged(redis) == events


def test_a_batch_child_runs_async_handlers_on_a_loop_of_its_own_kept_across_batches(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    # One event per batch: the child keeps its loop from one batch to the next.
    harness = make_harness(webhook_worker_mode="fork", webhook_batch_size=1)
    marks: list[str] = []

    async def mark_here(event: Event) -> None:
        marks.append(loop_mark())

    run_handler(mark_here, an_event())  # this process, the worker's, now has its loop

    url = harness.settings.redis_url

    @handler("inbound", "order.created")
    async def mark_in_child(event: Event) -> None:
        Redis.from_url(url).rpush("marks", loop_mark())

    for n in range(3):
        harness.event(f"b{n}")
    harness.drain()
    in_child = set(logged(redis, "marks"))
    assert len(logged(redis, "marks")) == 3
    assert len(in_child) == 1  # one loop for the three batches
    assert in_child.isdisjoint(marks)  # not the worker's, copied by the fork


def test_a_batch_child_never_closes_the_loop_it_was_forked_with(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    """The child's copy of the worker's loop shares the worker's epoll instance: closed (as
    the garbage collector closes a loop it collects), it would take the worker's self-pipe
    out of it, and the worker's loop would no longer wake for what other threads hand it.
    Whether a collection does so depends on the order it finalizes objects in, so the
    child is checked for the copy itself: still there, open."""
    harness = make_harness(webhook_worker_mode="fork")
    url = harness.settings.redis_url

    async def mark(event: Event) -> None:
        asyncio.get_running_loop().test_mark = "the worker's"  # type: ignore[attr-defined]

    run_handler(mark, an_event())  # this process, the worker's, now has its loop

    @handler("inbound", "order.created")
    async def look_for_it(event: Event) -> None:
        gc.collect()  # whatever the child no longer holds is finalized now
        copies = [
            o
            for o in gc.get_objects()
            if isinstance(o, asyncio.AbstractEventLoop)
            and getattr(o, "test_mark", None) == "the worker's"
        ]
        open_copies = [loop for loop in copies if not loop.is_closed()]
        Redis.from_url(url).rpush("copies", f"{len(copies)} {len(open_copies)}")

    harness.event("c1")
    harness.drain()
    assert logged(redis, "copies") == ["1 1"]


@pytest.mark.parametrize("mode", MODES)
def test_a_timed_out_async_handler_is_cancelled_and_the_next_event_runs_on_the_same_loop(
    make_harness: Callable[..., Harness],
    redis: Redis,
    module_client: aioredis.Redis,
    mode: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_max_retries=0, webhook_job_timeout=1)

    @handler("inbound", "order.created")
    async def waits_when_slow(event: Event) -> None:
        await client().rpush("log", f"{event.id} {loop_mark()}")
        if event.id == "slow":
            try:
                await client().blpop(["never"], timeout=0)  # until the job's timeout
            except asyncio.CancelledError:
                await client().rpush("log", "slow cancelled")  # still on its loop
                raise

    harness.event("slow")
    harness.event("next")
    harness.drain()
    assert statuses(redis, "slow", "next") == {"slow": JobStatus.FAILED, "next": JobStatus.FINISHED}
    slow = Job.fetch(job_id_for("inbound", "slow"), connection=redis)
    assert "JobTimeoutException" in slow.meta["last_error"]
    started, cancelled, after = logged(redis)
    assert cancelled == "slow cancelled"  # before the next event started
    assert (started.split()[0], after.split()[0]) == ("slow", "next")
    assert started.split()[1] == after.split()[1]  # one loop


def test_a_timeout_raised_in_one_of_the_loops_callbacks_still_ends_the_handler() -> None:
    """SIGALRM's handler raises wherever the main thread is: inside a callback of the loop,
    asyncio would log the exception and carry on."""
    cancelled: list[bool] = []

    def expire() -> None:
        raise JobTimeoutException("Task exceeded maximum timeout value (1 seconds)")

    async def waits(event: Event) -> None:
        asyncio.get_running_loop().call_soon(expire)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(JobTimeoutException):
        run_handler(waits, an_event())
    assert cancelled == [True]


def test_an_async_handler_that_ignores_its_cancellation_is_left_pending_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(handler_loop, "CANCEL_GRACE", 0.05)
    tasks: list[asyncio.Task[object]] = []
    released: list[bool] = []

    def expire() -> None:
        raise JobTimeoutException("Task exceeded maximum timeout value (1 seconds)")

    async def stubborn(event: Event) -> None:
        tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        asyncio.get_running_loop().call_soon(expire)
        while not released:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(3600)

    async def next_one(event: Event) -> None:
        pass

    with pytest.raises(JobTimeoutException):
        run_handler(stubborn, an_event())  # returns once its grace is over
    assert "did not finish within 0.05 s of its cancellation" in caplog.text
    run_handler(next_one, an_event("evt_2"))  # the loop is still usable
    assert not tasks[0].done()  # still there, as the warning said
    released.append(True)
    tasks[0].cancel()
    handler_loop.run(asyncio.wait(tasks))
