"""How the worker stops without leaving a transaction half-told: the parts of RQ's stop that
this worker changes, whatever runs its batches.

- A warm stop (SIGTERM, a first Ctrl+C) that comes while a transaction is in flight (a
  batch's begin or settlement) waits until it has its answer: a connection cut between
  being sent and being answered could not be told applied from not. RQ raises
  `StopRequested` from its signal handler when the worker is not busy; that is deferred to
  the end of the transaction (`critical`). A second signal still stops the worker at once
  (RQ's cold shutdown).
- RQ's command listener (redis-py's `PubSubWorkerThread`) is told to end at its next
  message, without waiting for it: redis-py >= 8.2's `stop()` joins its loop, which RQ runs
  with a 60 s wait (`stop_listening`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rq.worker import WorkerStatus

from workers.runtime.maintenance import MaintainedWorker


class StoppingWorker(MaintainedWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._critical = 0
        self._stop_pending = False

    @contextmanager
    def critical(self) -> Iterator[None]:
        """A transaction in flight: a warm stop meanwhile waits for its answer."""
        self._critical += 1
        try:
            yield
        finally:
            self._critical -= 1
        if not self._critical and self._stop_pending:
            self._stop_pending = False
            super()._shutdown()  # type: ignore[no-untyped-call]

    def _shutdown(self) -> None:
        if self._critical and self.get_state() != WorkerStatus.BUSY:
            self._stop_pending = True
            return
        super()._shutdown()  # type: ignore[no-untyped-call]

    def unsubscribe(self) -> None:
        # A loop that went back to wait for a message before RQ's stop() cleared its flag
        # held the stop for a minute (honcho SIGKILLs after 5 s). Cleared first, the flag
        # ends the loop at the unsubscribe's own reply.
        self.stop_listening()
        super().unsubscribe()  # type: ignore[no-untyped-call]

    def stop_listening(self) -> None:
        end_listener(self)


def end_listener(worker: object) -> None:
    """Ends an RQ worker's command listener (a thread) at its next message, without waiting
    for it. `_running` is redis-py's PubSubWorkerThread internal (8.0-8.2,
    docs/internals.md), pinned by tests/test_worker_unsubscribe.py."""
    thread = getattr(worker, "pubsub_thread", None)
    if thread is not None:
        thread._running.clear()
