"""One pipeline per event-loop tick for the claim scripts of concurrent requests.

Under load, dozens of requests reach the claim in the same tick. Sending their EVALSHAs
in one pipeline (not a transaction: each script is atomic by itself) saves a write and a
read per request for the event loop and the socket: +13 % requests/s in `make bench`.
Each request still gets its own answer or its own error, and a cut connection fails every
request of the batch with it, so each is answered 503 and retried by its provider.

A request's work waits while a batch holds `BATCH_CAP` claims (a batch delivery's claims,
or requests already under way, may still add to it), so that Redis works on one while this process
verifies the requests of the next. Under a burst, every request of a tick was verified
before the first claim left, and the process then sat idle, a fifth of its time, while
Redis ran them all (`make_way`; docs/benchmarks.md).

With WEBHOOK_REPLICA_ACKS, the same pipeline ends with the replicas' wait
(`app/replication.py`): one wait per batch, on the connection that wrote the claims. Too
few acknowledgements fail every request of the batch, answered (duplicate or not) 503.
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError

from app.replication import ReplicaAcks

# Claims in a batch at which the next request waits (`make_way`): small enough that
# Redis's work on a batch overlaps this process's on the next (16 requests are about 2 ms
# of it), large enough that the batch's own cost (a pooled connection, a write, a read)
# stays a small share of each request's.
BATCH_CAP = 16


class ScriptBatcher:
    def __init__(self, redis: aioredis.Redis, script: str, acks: ReplicaAcks | None = None) -> None:
        self.redis = redis
        self.acks = acks
        self.script = redis.register_script(script)
        self.pending: list[tuple[list[str], list[Any], asyncio.Future[Any]]] = []
        self.flushes: set[asyncio.Task[None]] = set()  # referenced, so none is collected

    async def __call__(self, keys: list[str], args: list[Any], timeout: float | None = None) -> Any:
        """The script's answer, or `TimeoutError` after `timeout` seconds (the call may
        still land: the caller's answer must allow for it)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.pending.append((keys, args, future))
        if len(self.pending) == 1:
            # Runs after every request already ready in this tick has added its call.
            task = loop.create_task(self.flush())
            self.flushes.add(task)
            task.add_done_callback(self.flushes.discard)
        if timeout is None:
            return await future
        # A timer handle, not `asyncio.timeout`: a tenth of the cost, on every request.
        timer = loop.call_later(timeout, _expire, future)
        try:
            return await future
        finally:
            timer.cancel()

    def full(self) -> bool:
        """Whether the batch being gathered holds `BATCH_CAP` claims: the next request's
        work waits until it is sent (`make_way`)."""
        return len(self.pending) >= BATCH_CAP

    async def flush(self) -> None:
        batch, self.pending = self.pending, []
        try:
            results = await self.send(batch)
            if self.acks is not None:
                self.acks.check(results[len(batch) :])
            missing = [i for i, r in enumerate(results[: len(batch)]) if _no_script(r)]
            if missing:
                # Redis restarted or its script cache was flushed: load it once and send
                # again only what did not run; a claim that landed would answer duplicate.
                await self.redis.script_load(self.script.script)
                again = await self.send([batch[i] for i in missing])
                if self.acks is not None:
                    self.acks.check(again[len(missing) :])
                for i, result in zip(missing, again, strict=False):
                    results[i] = result
        except Exception as exc:
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (*_, future), result in zip(batch, results, strict=False):
            if future.done():
                continue  # that request was cancelled meanwhile
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    async def send(self, batch: list[tuple[list[str], list[Any], Any]]) -> list[Any]:
        """One write and its replies on a pooled connection, tried again as redis-py
        tries a pipeline (the client's `Retry`, on a cut connection): the claims are
        idempotent. Not redis-py's pipeline object: its per-execute bookkeeping was a
        tenth of the batcher's cost per request."""
        # EVALSHA by hand: a registered Script in a pipeline would cost an extra SCRIPT
        # EXISTS round trip per batch.
        commands: list[tuple[Any, ...]] = [
            ("EVALSHA", self.script.sha, len(keys), *keys, *args) for keys, args, _ in batch
        ]
        if self.acks is not None:
            commands += self.acks.commands()
        pool = self.redis.connection_pool
        connection = await pool.get_connection()  # type: ignore[no-untyped-call]
        try:
            return list(
                await connection.retry.call_with_retry(
                    lambda: _round_trip(connection, commands),
                    lambda error: connection.disconnect(),
                )
            )
        finally:
            await pool.release(connection)


async def _round_trip(connection: Any, commands: list[tuple[Any, ...]]) -> list[Any]:
    await connection.send_packed_command(connection.pack_commands(commands))
    replies: list[Any] = []
    try:
        for _ in commands:
            try:
                replies.append(await connection.read_response())
            except ResponseError as exc:  # that command's error, as a pipeline keeps it
                replies.append(exc)
    except BaseException:
        # Replies left on the socket: never handed to the next borrower.
        await connection.disconnect(nowait=True)
        raise
    return replies


def _no_script(result: Any) -> bool:
    return isinstance(result, NoScriptError)


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())
