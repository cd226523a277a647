"""What makes rq-dashboard safe to put in front of operators: escaping, CSRF, destructive actions.

rq-dashboard 0.9 has three holes this module closes:
- Its pages build HTML with underscore templates whose `<%= %>` inserts text unescaped: job
  ids, descriptions, call strings (the job's arguments), error messages, metadata, queue
  and worker names. `escape_rq_dashboard` rewrites every such template as it is loaded
  (through a `TransformingLoader`) so that each value goes through `<%- %>` (underscore's
  escaping form): every page, every value.
- Its actions (requeue, delete, empty, compact) trust any request that carries the login,
  and browsers attach a Basic login to cross-site requests by themselves: a page on
  another origin could empty the dead letters, and requeue-all even answers GET, so an
  `<img>` could trigger it. `check_action` accepts an action only as a POST from the
  dashboard's own origin (Origin, or else Referer).
- Emptying or deleting jobs that have not run yet deletes acknowledged events for good.
  For the webhook queue, only settled jobs (failed, finished, canceled) can be deleted.
- It deletes a job with `Job.delete()` after reading it, and empties a registry by
  deleting each id it read: a dead letter requeued in between (by another operator, the
  command, the Events page), or a finished event replayed in between, lost its hash and
  its queue entry while its record said queued. For the webhook queue, the guard answers
  these itself with the purge every other path uses (`purge.py`), which deletes a job only
  if it is still where it was listed (a dead letter; finished or canceled), in the same
  atomic step; one requeued or replayed meanwhile is left whole (a 409 for one, counted as
  skipped in an empty).
- Its requeue leaves a dead letter's retry budget spent, and the event's record silent about
  it: for the webhook queue the guard answers it with the requeue every other path uses
  (`dashboard_requeue.py`).
Each accepted action writes one log line naming what it acts on and how many jobs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, jsonify, request
from jinja2 import BaseLoader, Environment
from redis import Redis
from rq import Queue
from rq.defaults import RQ_KEY_PREFIX
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import BaseRegistry

from app.keys import Keys
from app.logs import logger
from workers.ops.dashboard_requeue import DashboardRequeue
from workers.ops.purge import Purge, Settled

_DIV_TEXT_HTML = re.compile(r"<%=\s*\$\('<div/>'\)\.text\((.+?)\)\.html\(\)\s*%>")
_RAW = "<%="
# Registries whose jobs have settled: deleting them loses no event that has not run.
SETTLED = {"failed", "finished", "canceled"}
SETTLED_STATUSES = {JobStatus.FAILED, JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.STOPPED}
# The statuses of a job in the failed registry: a dead letter, deleted by our purge.
DEAD_STATUSES = {JobStatus.FAILED, JobStatus.STOPPED}
# Why a purge of one job found nothing to delete.
GONE = {
    Settled.FAILED: "this event is no longer a dead letter (requeued meanwhile): nothing was "
    "deleted",
    Settled.FINISHED: "this event is no longer finished (replayed meanwhile): nothing was deleted",
    Settled.CANCELED: "this job is no longer canceled (enqueued again meanwhile): nothing was "
    "deleted",
}


def escape_interpolations(source: str) -> str:
    """Every `<%= x %>` of an underscore template becomes `<%- x %>`, which HTML-escapes x.

    The two places that escaped by hand (`$('<div/>').text(x).html()`) are unwrapped first,
    so their text is not escaped twice.
    """
    return _DIV_TEXT_HTML.sub(r"<%- \1 %>", source).replace(_RAW, "<%-")


def escape_rq_dashboard(name: str, source: str) -> str:
    """rq-dashboard's own templates with every underscore interpolation escaped; others as
    they are."""
    return escape_interpolations(source) if name.startswith("rq_dashboard/") else source


class TransformingLoader(BaseLoader):
    """Serves the templates of the loader it wraps through `transform(name, source)`."""

    def __init__(self, inner: BaseLoader, transform: Callable[[str, str], str]) -> None:
        self.inner = inner
        self.transform = transform

    def get_source(
        self, environment: Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
        source, filename, uptodate = self.inner.get_source(environment, template)
        return self.transform(template, source), filename, uptodate

    def list_templates(self) -> list[str]:
        return self.inner.list_templates()


def action_endpoints(app: Flask) -> set[str]:
    """The routes that change something: every one that accepts POST."""
    return {
        str(rule.endpoint) for rule in app.url_map.iter_rules() if "POST" in (rule.methods or ())
    }


def same_origin() -> bool:
    """The request comes from a page of this dashboard (Origin, or else Referer)."""
    sent = request.headers.get("Origin") or request.headers.get("Referer")
    if not sent or sent == "null":
        return False
    return urlsplit(sent).netloc.lower() == request.host.lower()


class ActionGuard:
    def __init__(
        self,
        app: Flask,
        queue_name: str,
        connection: Callable[[], Redis],
        logged_by_view: frozenset[str] = frozenset(),
        requeue: DashboardRequeue | None = None,
    ) -> None:
        self.actions = action_endpoints(app)
        # Answers rq-dashboard's requeues of the webhook queue (`dashboard_requeue.py`).
        self.requeue = requeue
        self.queue_name = queue_name
        self.connection = connection
        # Actions whose view logs them itself, with their outcome (the Events page's).
        self.logged_by_view = logged_by_view

    def check(self) -> Response | None:
        """Refuse an action that is not a same-origin POST, or that would lose events."""
        if request.endpoint not in self.actions:
            return None
        if request.method != "POST":
            return _refuse(405, "actions are POST only", {"Allow": "POST"})
        if not same_origin():
            return _refuse(403, "cross-origin request refused")
        if request.endpoint in self.logged_by_view:
            return None
        args = request.view_args or {}
        name = str(request.endpoint).removeprefix("rq_dashboard.")
        if name == "empty_queue":
            return self._empty(str(args["queue_name"]), str(args["registry_name"]))
        if name == "delete_job_view":
            return self._delete(str(args["job_id"]))
        if name == "requeue_all" and self.requeue is not None:
            every = self.requeue.every(str(args["queue_name"]))
            if every is not None:
                answer, done, skipped = every
                log_action("requeue_all", queue=self.queue_name, count=done, skipped=skipped)
                return answer
        if name == "requeue_job_view" and self.requeue is not None:
            one = self.requeue.one(str(args["job_id"]))
            if one is not None:
                log_action("requeue", job_id=str(args["job_id"]), count=one[1])
                return one[0]
        if name == "requeue_all":
            queue = Queue(str(args["queue_name"]), connection=self.connection())
            count = queue.failed_job_registry.get_job_count(cleanup=False)
            log_action("requeue_all", queue=queue.name, registry="failed", count=count)
        elif name == "requeue_job_view":
            log_action("requeue", job_id=str(args["job_id"]), count=1)
        else:
            log_action(name, **{k: str(v) for k, v in args.items()})
        return None

    def _empty(self, queue_name: str, registry: str) -> Response | None:
        if queue_name == self.queue_name and registry not in SETTLED:
            return _refuse(
                403,
                f"emptying {registry!r} of the webhook queue would delete acknowledged events "
                "that have not run; only failed, finished and canceled can be emptied",
            )
        if queue_name == self.queue_name and registry in SETTLED and _deletes():
            return self._purge_all(Settled(registry))
        queue = Queue(queue_name, connection=self.connection())
        count = queue.count if registry == "queued" else _registry_count(queue, registry)
        log_action("empty", queue=queue_name, registry=registry, count=count)
        return None

    def _delete(self, job_id: str) -> Response | None:
        try:
            job = Job.fetch(job_id, connection=self.connection())
        except NoSuchJobError:
            return None  # rq-dashboard answers this itself
        except ValueError:  # an id RQ refuses to read: rq-dashboard's own delete raised (500)
            return _refuse(404, "no such job")
        status = job.get_status() if job.origin == self.queue_name else None
        if status in DEAD_STATUSES and _deletes():
            return self._purge_one(job_id, Settled.FAILED)
        if status in (JobStatus.FINISHED, JobStatus.CANCELED) and _deletes():
            return self._purge_one(job_id, Settled(status.value))
        if status is not None and status not in SETTLED_STATUSES:
            return _refuse(
                403,
                "this event has not settled; deleting it would lose an acknowledged event",
            )
        log_action("delete", queue=job.origin, job_id=job_id, count=1)
        return None

    def _purge(self, registry: Settled) -> Purge:
        # Only RQ's keys of the queue are named (no prefix of ours), under this process's
        # RQ prefix: a shard's, in a cluster's shard dashboard.
        return Purge(Keys("", self.queue_name, RQ_KEY_PREFIX), self.connection(), registry)

    def _purge_one(self, job_id: str, registry: Settled) -> Response:
        if not self._purge(registry)(job_id):
            return _refuse(409, GONE[registry])
        log_action("delete", queue=self.queue_name, job_id=job_id, count=1)
        return _answer()

    def _purge_all(self, registry: Settled) -> Response:
        purge = self._purge(registry)
        listed = _registry(Queue(self.queue_name, connection=self.connection()), registry.value)
        assert listed is not None
        job_ids = [str(i) for i in listed.get_job_ids(cleanup=False)]
        purged = sum(purge(job_id) for job_id in job_ids)
        skipped = len(job_ids) - purged
        log_action(
            "empty", queue=self.queue_name, registry=registry.value, count=purged, skipped=skipped
        )
        return _answer()


def _deletes() -> bool:
    """rq-dashboard's delete and empty are on (else it answers them itself: disabled)."""
    return not current_app.config.get("RQ_DASHBOARD_DISABLE_DELETE")


def _answer() -> Response:
    """rq-dashboard's own answer to a delete or an empty that was done."""
    response = jsonify(status="OK")
    response.headers["Cache-Control"] = "no-store"
    return response


def _registry_count(queue: Queue, registry: str) -> int:
    found = _registry(queue, registry)
    return int(found.get_job_count(cleanup=False)) if found is not None else 0


def _registry(queue: Queue, name: str) -> BaseRegistry | None:
    registries: dict[str, BaseRegistry] = {
        "failed": queue.failed_job_registry,
        "finished": queue.finished_job_registry,
        "canceled": queue.canceled_job_registry,
        "started": queue.started_job_registry,
        "scheduled": queue.scheduled_job_registry,
        "deferred": queue.deferred_job_registry,
    }
    return registries.get(name)


def log_action(action: str, **fields: Any) -> None:
    user = request.authorization.username if request.authorization else None
    logger.warning("dashboard action", extra={"action": action, "user": user, **fields})


def _refuse(status: int, detail: str, headers: dict[str, str] | None = None) -> Response:
    logger.warning(
        "dashboard action refused",
        extra={"endpoint": request.endpoint, "method": request.method, "status": status},
    )
    return Response(detail + "\n", status, headers, mimetype="text/plain")
