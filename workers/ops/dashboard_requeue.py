"""rq-dashboard's requeue buttons, for the webhook queue: the requeue every other path uses.

rq-dashboard requeues a failed job with RQ's `requeue_job`, which leaves its retry budget
spent: the worker noticed at the next attempt and gave it back (`workers/runtime/retries.py`),
but the event's record never said that an operator had requeued it, nor when. For the
webhook queue the dashboard answers both buttons (one job; every dead letter) itself with
`DeadLetters.requeue`, by "rq-dashboard": the full budget at once, and the requeue in the
event's record (`reruns.py`), shown among its attempts on the Events page, and in the log,
as a requeue from the Events page or the command is. Other queues' jobs are rq-dashboard's.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Response, jsonify
from redis import Redis
from rq.exceptions import NoSuchJobError
from rq.job import Job

from app.settings import Settings
from workers.ops.deadletters import DeadLetters

BY = "rq-dashboard"


class DashboardRequeue:
    def __init__(self, settings: Settings, connection: Callable[[], Redis]) -> None:
        self.settings = settings
        self.connection = connection

    def _store(self) -> DeadLetters:
        return DeadLetters(self.settings, self.connection())

    def one(self, job_id: str) -> tuple[Response, int] | None:
        """rq-dashboard's requeue of one job; None for a job of another queue."""
        try:
            job = Job.fetch(job_id, connection=self.connection())
        except (NoSuchJobError, ValueError):
            # rq-dashboard's own requeue raises there: a 500 for a job purged in another tab,
            # or an id RQ refuses to read (ValueError: not letters, digits, `_` and `-`).
            return Response(
                "no such job (purged or expired meanwhile)\n", 404, mimetype="text/plain"
            ), 0
        if job.origin != self.settings.webhook_queue:
            return None
        if not self._store().requeue(job_id, by=BY):
            detail = "this event is no longer a dead letter (requeued or purged meanwhile)\n"
            return Response(detail, 409, mimetype="text/plain"), 0
        return _answer(status="OK"), 1

    def every(self, queue_name: str) -> tuple[Response, int, int] | None:
        """rq-dashboard's requeue of every failed job of a queue: the webhook queue's here,
        each one still a dead letter when its turn comes (the others are counted as
        skipped); None for another queue."""
        if queue_name != self.settings.webhook_queue:
            return None
        store = self._store()
        job_ids = store.ids()
        done = sum(store.requeue(job_id, by=BY) for job_id in job_ids)
        # rq-dashboard's own answer counts the jobs it listed.
        return _answer(status="OK", count=len(job_ids)), done, len(job_ids) - done


def _answer(**fields: object) -> Response:
    response = jsonify(**fields)
    response.headers["Cache-Control"] = "no-store"
    return response
