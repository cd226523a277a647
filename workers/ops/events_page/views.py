"""The Events page's routes: the search with the day's picture, one event, its actions.

Mounted in the dashboard's Flask app, so its login applies, and its action guard: the
POST routes answer only same-origin POSTs (`dashboard_guard.py`); they log their outcome
themselves. Every page is rendered here with no script, under a CSP that forbids any. The
bulk actions on a search's dead letters have their routes in `bulk_views.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, abort, redirect, request, url_for
from redis import Redis

from app.formats import iso
from app.jobstate import PENDING, EventStatus
from app.settings import Settings
from workers.ops.dashboard_guard import log_action
from workers.ops.events_page import actions, bulk_views
from workers.ops.events_page.chart import draw
from workers.ops.events_page.chart_range import chosen, links
from workers.ops.events_page.detail import load_detail, settled_text
from workers.ops.events_page.layout import page_layout
from workers.ops.events_page.moments import Moment, moment, waited
from workers.ops.events_page.picture import read_queue, read_timeline
from workers.ops.events_page.search import EventSearch, Page, Query
from workers.ops.events_page.search_form import LIMITS, carried, form_of, parse_query
from workers.ops.events_page.templates import STYLESHEET, render
from workers.ops.ledger import EventLedger, LedgerRecord

ACTIONS = frozenset({"events.requeue", "events.replay"}) | bulk_views.ACTIONS
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
RANGES = (("hour", 3600), ("24 hours", 86_400), ("7 days", 7 * 86_400))
# The error a row carries (shown on one line, all of it in its title): a bounded page.
MAX_ERROR = 2000
# The actions' `handlers` field: which of the event's handlers run again.
FAILED_HANDLERS, ALL_HANDLERS = "failed", "all"
Action = Callable[[Settings, Redis, LedgerRecord, bool], actions.Done]


@dataclass(frozen=True, slots=True)
class Row:
    """A ledger record as the results table shows it: times relative to the page's now
    (the exact time on hover), the error on one line (the whole of it on hover)."""

    source: str
    id: str
    type: str
    status: str
    attempts: int
    error: str
    received: Moment | None
    settled: Moment | None

    @classmethod
    def of(cls, record: LedgerRecord, now: float) -> Row:
        error = record.last_error
        return cls(
            record.source,
            record.id,
            record.type,
            str(record.status),
            record.attempts,
            error if len(error) <= MAX_ERROR else error[: MAX_ERROR - 1] + "…",
            moment(record.received_at, now),
            moment(record.settled_at, now),
        )


def _summary(query: Query, page: Page) -> str:
    shown = len(page.rows)
    if query.event_id:
        if page.stripped_id:
            # Not echoed: a fixed sentence; the row shows the id that was found.
            return (
                "No event has exactly that id; shown: the event whose id is the one you "
                "entered without the spaces or line breaks around it."
            )
        return "Found." if shown else "No event with that id (in any source searched)."
    parts = [f"{shown} event{'' if shown == 1 else 's'} shown"]
    if page.in_range is not None:
        parts.append(f"of {page.in_range} received in this range")
    if page.budget_spent and page.reached is not None:
        parts.append(
            f"(looked through {page.examined} events, back to {iso(page.reached)}; "
            "older ones may match too)"
        )
    return " ".join(parts) + "."


def events_blueprint(settings: Settings, connection: Callable[[], Redis]) -> Blueprint:
    blueprint = Blueprint("events", __name__, url_prefix="/events")
    keys = settings.keys
    sources = list(settings.sources)

    def ledger() -> EventLedger:
        return EventLedger(keys, connection())

    @blueprint.get("")
    def index() -> str:
        query, errors = parse_query(request.args, sources)
        redis = connection()
        # A bulk requeue's events: how many, and whether they are still kept.
        requeued = int(redis.zcard(keys.requeued(query.requeued))) if query.requeued else None
        if requeued == 0:
            errors.append("That list of requeued events is no longer kept (a week).")
        page = EventSearch(ledger(), sources).run(query)
        now = time.time()
        form = form_of(request.args)
        older = None
        if page.more is not None and not query.event_id:
            older = url_for("events.index", **carried(form), after=page.more.encode())
        queue = read_queue(redis, keys)
        # The chart's range: `?range=hour|day|week`, or (anything else) the one that fits.
        chart = draw(
            read_timeline(redis, keys.prefix, sources, now, chosen(request.args.get("range")))
        )
        return render(
            "index.html",
            now=queue,
            age=waited(queue.oldest_age),
            chart=chart,
            shard=settings.shard,
            chart_links=links(
                chart.span,
                chart.auto,
                lambda choice: url_for("events.index", **carried(form), range=choice) + "#day",
            ),
            sources=sources,
            statuses=[str(s) for s in EventStatus],
            limits=LIMITS,
            page_size=query.size,
            form=form,
            errors=errors,
            rows=[Row.of(record, now) for record in page.rows],
            bulk=bulk_views.buttons(query, errors, form, redis, settings),
            bulk_done=bulk_views.banner(request.args),
            requeued=requeued,
            summary=_summary(query, page),
            older=older,
            newest=url_for("events.index", **carried(form)),
            ranges=[
                (label, url_for("events.index", since=str(int(now - span))))
                for label, span in RANGES
            ],
        )

    @blueprint.get("/event")
    def event() -> str:
        source, event_id = _named_event(request.args, sources)
        record = ledger().get(source, event_id)
        if record is None:
            abort(404)
        detail = load_detail(connection(), record, keys.failed)
        done = request.args.get("done", "")
        every = request.args.get("handlers") == ALL_HANDLERS
        message = actions.message(actions.Done(done), every) if done in set(actions.Done) else None
        pending = record.status in PENDING and detail.job_status is not None
        return render(
            "event.html",
            # Reloads by default while pending, so that a requeue's outcome shows up.
            layout=page_layout(default_on=pending),
            d=detail,
            received=iso(record.received_at),
            settled=settled_text(record, detail.enqueued_at),
            pending=pending,
            message=message,
        )

    def act(name: str, action: Action) -> Any:
        source, event_id = _named_event(request.form, sources)
        # The button pressed: anything but "all" (a form from before the choice included)
        # reruns only the handlers that have not succeeded, the command's default.
        every = request.form.get("handlers") == ALL_HANDLERS
        record = ledger().get(source, event_id)
        done = action(settings, connection(), record, every) if record else actions.Done.UNKNOWN
        log_action(
            name,
            source=source,
            event_id=event_id,
            job_id=record.job_id if record else None,
            outcome=str(done),
            count=int(done in (actions.Done.REQUEUED, actions.Done.ENQUEUED)),
            all_handlers=every,
        )
        handlers = ALL_HANDLERS if every else FAILED_HANDLERS
        page = url_for(
            "events.event", source=source, id=event_id, done=str(done), handlers=handlers
        )
        return redirect(page, 303)

    @blueprint.post("/requeue")
    def requeue() -> Any:
        return act("events.requeue", actions.requeue)

    @blueprint.post("/replay")
    def replay() -> Any:
        return act("events.replay", actions.replay)

    bulk_views.add_bulk_routes(blueprint, settings, connection, sources)

    @blueprint.get("/style.css")
    def stylesheet() -> Response:
        return Response(STYLESHEET, mimetype="text/css", headers={"Cache-Control": "max-age=300"})

    @blueprint.after_request
    def harden(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Cache-Control"] = response.headers.get("Cache-Control", "no-store")
        return response

    return blueprint


def _named_event(fields: Mapping[str, str], sources: list[str]) -> tuple[str, str]:
    source, event_id = fields.get("source", ""), fields.get("id", "")
    if source not in sources or not event_id or len(event_id) > 4096:
        abort(404)
    return source, event_id
