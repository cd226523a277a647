"""The worker's heartbeats and state, in fewer round trips than RQ's loop sends them.

RQ's `Worker.heartbeat` writes three commands one round trip each (the worker hash's
`last_heartbeat`, and the expiry of it and of its executions set), its loop beats right
after each job and again before it waits for the next, and `set_state` is a round trip of
its own. For a batch that is seven round trips of its thirteen (profiled: docs/benchmarks.md,
"Where the drain's time goes"). Here the same writes go in one pipeline, a beat that comes
within BEAT_AGAIN of a plain one is left out (the keys' expiry is minutes, not seconds), and
the idle state goes with the beat before the take. What rq-dashboard and `rq info` read (the
worker's hash, its state, the keys' expiry) is what RQ writes.
"""

from __future__ import annotations

import time

from redis.client import Pipeline
from rq.worker import WorkerStatus

from workers.runtime.stopping import StoppingWorker

# A plain beat this soon after the last one writes nothing new worth a round trip.
BEAT_AGAIN = 1.0


class BeatingWorker(StoppingWorker):
    _plain_beat = float("-inf")  # when the last beat with the default expiry was sent

    def heartbeat(self, timeout: int | None = None, pipeline: Pipeline | None = None) -> None:
        if pipeline is not None:
            super().heartbeat(timeout, pipeline=pipeline)
            return
        if timeout is None and time.monotonic() - self._plain_beat < BEAT_AGAIN:
            return
        with self.connection.pipeline(transaction=False) as pipe:
            super().heartbeat(timeout, pipeline=pipe)
            pipe.execute()
        if timeout is None:
            self._plain_beat = time.monotonic()

    def idle(self) -> None:
        """The worker is idle (it is about to take the next batch), and alive: one round trip."""
        with self.connection.pipeline(transaction=False) as pipe:
            self.set_state(WorkerStatus.IDLE, pipeline=pipe)
            super().heartbeat(pipeline=pipe)
            pipe.execute()
        self._plain_beat = time.monotonic()
