"""The handler loop: the one event loop on which a process awaits its async handlers.

A coroutine handler is awaited on a loop that lasts as long as the process, not on a new
one per call (`asyncio.run`): a client that a handler module keeps at module level
(`redis.asyncio`, `httpx.AsyncClient`) makes its connections on the loop it first runs on,
and on a loop closed since, its next call fails ("Event loop is closed"). The loop is made
at the first async handler, so a process that runs only sync handlers never makes one.

- Where the calling thread runs no loop (the worker, in both modes; a synchronous test),
  the loop runs in it (`run_until_complete`), for one handler at a time.
- Where it runs one already (an async test calling the plugin's `deliver()` or
  `receiver.run_jobs()`), no loop can run inside it: the same loop is run by a thread of its
  own for the handler's time, while the caller waits. One loop either way, so a
  module-level client serves synchronous and async tests alike.
- A forked child (the worker's batch child) sets aside the loop it was copied with, whose
  epoll instance and self-pipe it shares with its parent, and never runs nor closes it: it
  makes its own at its first async handler, and keeps it for every event of every batch
  it runs.
- RQ's job timeout raises `JobTimeoutException` from SIGALRM's handler, in the main thread,
  wherever it is: often out of `run_until_complete`, the handler's task still pending. The
  task is then cancelled, and the loop run until it has finished cancelling (at most
  `CANCEL_GRACE` seconds): nothing of it is left to run with the next event's handler. A
  timeout that lands in one of the loop's own callbacks, where asyncio would only log it,
  stops the loop and is raised all the same.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

from rq.timeouts import BaseTimeoutException

from app.logs import logger

T = TypeVar("T")

# How long a cancelled handler has to finish cancelling (its `finally`, a client's close).
# One that ignores its cancellation is left pending on the loop, with a warning.
CANCEL_GRACE = 5.0


class HandlerLoop:
    """A process's loop for async handlers, made when first needed."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        # A timeout raised inside one of the loop's callbacks, which asyncio does not raise.
        self.interrupted: BaseException | None = None

    def run(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` on the loop; what it returns or raises."""
        loop = self.loop
        if loop is None:
            loop = self.loop = asyncio.new_event_loop()
            loop.set_exception_handler(self._callback_failed)
        if loop.is_running():
            raise RuntimeError(
                "the handler loop is busy: async handlers run one at a time (is a handler "
                "calling deliver(), or one that ignored its cancellation still running?)"
            )
        # Made in the caller's thread, wherever the loop runs: the handler sees the caller's
        # context variables (the version guard's job).
        task = loop.create_task(_await(awaitable))
        if _runs_a_loop():
            return self._run_beside(loop, task)
        return self._run_here(loop, task)

    def _run_here(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[T]) -> T:
        self.interrupted = None
        try:
            return loop.run_until_complete(task)
        except BaseException as exc:
            interrupted, self.interrupted = self.interrupted, None
            if not task.done():
                self._cancel_here(loop, task)
            if interrupted is not None and exc is not interrupted:
                raise interrupted from None  # in place of "loop stopped before ..."
            raise

    def _cancel_here(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[T]) -> None:
        task.cancel()
        loop.run_until_complete(asyncio.wait([task], timeout=CANCEL_GRACE))
        _settled(task)

    def _run_beside(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[T]) -> T:
        """Run the loop in a thread of its own until `task` is done, while this thread,
        whose loop is blocked, waits (where a timeout still reaches it)."""
        ended = threading.Event()

        def drive() -> None:
            try:
                loop.run_until_complete(asyncio.wait([task]))  # raises nothing of the task's
            finally:
                ended.set()

        threading.Thread(target=drive, name="webhooks-handler-loop", daemon=True).start()
        try:
            ended.wait()
        except BaseException:
            loop.call_soon_threadsafe(task.cancel)
            ended.wait(CANCEL_GRACE)
            _settled(task)
            raise
        return task.result()

    def _callback_failed(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        # Only the main thread gets SIGALRM's exception: a loop running beside never does.
        if isinstance(error, BaseTimeoutException) and threading.current_thread() is (
            threading.main_thread()
        ):
            self.interrupted = error
            loop.stop()
            return
        loop.default_exception_handler(context)


def _runs_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _settled(task: asyncio.Task[Any]) -> None:
    """After a cancellation: its exception read (asyncio logs one never read), or a warning
    that the handler is still running."""
    if not task.done():
        logger.warning(
            f"an async handler did not finish within {CANCEL_GRACE:g} s of its cancellation: "
            "it is left pending on the handler loop"
        )
    elif not task.cancelled():
        task.exception()


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


_process_loop = HandlerLoop()
# In a forked child, the loops it was forked with: kept, never closed. A copy shares its
# parent's epoll instance, and closing it (as the garbage collector closes a loop it
# collects) takes the parent's self-pipe out of that instance: the parent's loop would no
# longer wake for what its other threads hand it.
_inherited: list[HandlerLoop] = []


def run(awaitable: Awaitable[T]) -> T:
    """Await `awaitable` on this process's handler loop, from synchronous code (a thread
    running a loop of its own too); what it returns or raises."""
    return _process_loop.run(awaitable)


def _forget_in_child() -> None:
    global _process_loop
    _inherited.append(_process_loop)
    _process_loop = HandlerLoop()


os.register_at_fork(after_in_child=_forget_in_child)
