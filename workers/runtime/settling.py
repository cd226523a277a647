"""When a batch whose handlers have run is settled, and what the worker does while Redis
cannot be reached to settle it.

Its settlement is made while the next batch runs: in fork mode the worker settles it while
the child runs the next one (`horse.py`'s `before_wait`); in simple mode it sends the
settlement before it runs the next batch and reads its answer after (`settlement.send` and
`finish`), so Redis applies it while the handlers run. With no next batch (the queue is
empty, or the worker stops), it is settled at once.
"""

from __future__ import annotations

import time
from typing import Any

from app.logs import logger
from workers.runtime import settlement
from workers.runtime.batch import Batch
from workers.runtime.beats import BeatingWorker
from workers.runtime.settlement import settle_batch
from workers.runtime.stream import LINK_ERRORS

# A settlement that cannot reach Redis is tried again, backing off up to this (seconds).
SETTLE_RETRY_CAP = 2.0


class SettlingWorker(BeatingWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stop_signalled = False
        # A batch whose handlers have run, settled while the next one runs (or before the
        # worker waits for work, or stops).
        self._unsettled: Batch | None = None

    def send_settlement(self) -> settlement.Sent | None:
        """Send the settlement of the batch whose handlers have run, not waiting for its
        answer; or, when it cannot be sent, settle it now (`settle_unsettled`)."""
        batch = self._unsettled
        if batch is None:
            return None
        try:
            with self.critical(), batch.trace.step("settle"):
                return settlement.send(self, batch)
        except (settlement.OutOfTurn, *LINK_ERRORS):
            self.settle_unsettled()
            return None

    def finish_settlement(self, sent: settlement.Sent | None) -> None:
        """Read a sent settlement's answer; if a job changed meanwhile, or Redis could not
        be reached, settle the batch again now."""
        if sent is None:
            return
        try:
            with self.critical(), sent.batch.trace.step("settle"):
                settled = settlement.finish(sent)
        except LINK_ERRORS:
            settled = None
        if settled is None:
            self.settle_unsettled()
            return
        self._unsettled = None
        sent.batch.trace.end()

    def settle_unsettled(self) -> None:
        """Settle the batch whose handlers have run. While Redis cannot be reached, its
        jobs' ends are kept here and the settlement is tried again, backing off, until it
        answers: the worker does nothing else meanwhile (no take, no maintenance, whose
        recovery would find this batch's expired executions). A stop ends the wait: the
        batch is then left to recovery, as a killed worker's is."""
        if self._unsettled is None:
            return
        batch = self._unsettled
        delay, waited = 0.1, False
        while True:
            try:
                with self.critical(), batch.trace.step("settle"):
                    settle_batch(self, batch)
                    self._unsettled = None
                break
            except LINK_ERRORS as exc:
                if self.stop_signalled:
                    raise
                if not waited:
                    logger.warning(
                        "redis unreachable: the batch's outcomes are kept until it answers",
                        extra={"jobs": len(batch.entries), "error": type(exc).__name__},
                    )
                    waited = True
                time.sleep(delay)
                delay = min(delay * 2, SETTLE_RETRY_CAP)
        if waited:
            logger.info("redis answers again: the batch's outcomes are settled")
        batch.trace.end()
