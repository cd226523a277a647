"""The bulk actions' routes: the confirmation (GET, changes nothing) and the two POSTs.

The POSTs are in `ACTIONS`: the dashboard's guard answers them only as same-origin POSTs,
and they log their outcome themselves (one `dashboard action` line with the user).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, abort, redirect, request, url_for
from redis import Redis
from werkzeug.wrappers import Response

from app.keys import Keys
from app.settings import Settings
from workers.ops.dashboard_guard import log_action
from workers.ops.deadletters import DeadLetters
from workers.ops.events_page import requeued
from workers.ops.events_page.bulk import (
    AT_ONCE,
    JOB_ID,
    BulkResult,
    Filters,
    Found,
    Verb,
    apply,
    find,
    groups,
    selected,
)
from workers.ops.events_page.bulk_template import CONFIRM
from workers.ops.events_page.layout import page_layout
from workers.ops.events_page.search import Query
from workers.ops.events_page.search_form import FILTERS, form_of, parse_query
from workers.ops.events_page.templates import environment

ACTIONS = frozenset({"events.bulk_requeue", "events.bulk_purge"})
# The value of the requeue's `handlers` button that reruns every handler (as the event
# page's buttons say it).
ALL_HANDLERS = "all"
_confirm = environment.from_string(CONFIRM)


@dataclass(frozen=True, slots=True)
class Banner:
    """A bulk action's result, at the top of the page it redirected to: its sentence, and
    after a requeue, a link to the events it put back (the search it came from no longer
    shows them: they are not dead letters any more)."""

    sentence: str
    requeued: str | None = None  # the link
    count: int = 0


@dataclass(frozen=True, slots=True)
class Buttons:
    """The bulk buttons under a search: how many dead letters it matches, on every page."""

    count: int
    partial: bool
    requeue: str
    purge: str


def buttons(
    query: Query, errors: list[str], form: Mapping[str, str], redis: Redis, settings: Settings
) -> Buttons | None:
    """None when the search has a bad field (the bulk would drop it and take more), its
    status leaves dead letters out, or it matches none."""
    filters = Filters.of(query, within(redis, settings, query))
    if errors or filters is None:
        return None
    if not redis.zcard(settings.keys.failed):
        return None
    found = find(redis, settings.keys, filters)
    if not found.letters:
        return None
    fields = _filters(form)
    return Buttons(
        len(found.letters),
        found.partial,
        url_for("events.bulk", verb=str(Verb.REQUEUE), **fields),
        url_for("events.bulk", verb=str(Verb.PURGE), **fields),
    )


def banner(args: Mapping[str, str]) -> Banner | None:
    """The result of a bulk action the page was redirected from: counts, and the token of
    the events a requeue put back (`requeued.py`), checked before it is linked to."""
    result = BulkResult.said(args)
    if result is None:
        return None
    sentence = result.sentence()
    token = args.get("batch", "")
    if result.verb is not Verb.REQUEUE or not result.done or not requeued.valid(token):
        return Banner(sentence)
    # To the search's results, below the picture: what the link is for is in view.
    return Banner(sentence, url_for("events.index", requeued=token, _anchor="search"), result.done)


def within(redis: Redis, settings: Settings, query: Query) -> frozenset[tuple[str, str]] | None:
    """The events of the bulk requeue a search names, for the bulk actions' filters."""
    if not query.requeued:
        return None
    return requeued.members(redis, _keys(settings), query.requeued)


def _keys(settings: Settings) -> Keys:
    return settings.keys


def add_bulk_routes(
    blueprint: Blueprint, settings: Settings, connection: Callable[[], Redis], sources: list[str]
) -> None:
    def selection(fields: Mapping[str, str]) -> tuple[Filters | None, list[str]]:
        query, errors = parse_query(fields, sources)
        return selected(query, errors, within(connection(), settings, query)), errors

    @blueprint.get("/bulk")
    def bulk() -> str:
        try:
            verb = Verb(request.args.get("verb", ""))
        except ValueError:
            abort(404)
        form = form_of(request.args, FILTERS)
        filters, errors = selection(form)
        found = Found([], 0, 0)
        if filters is not None and not errors:
            found = find(connection(), settings.keys, filters)
        listed = found.letters[:AT_ONCE]
        fields = _filters(form)
        return _confirm.render(
            layout=page_layout(default_on=False),
            verb=str(verb),
            back=url_for("events.index", **fields),
            errors=errors,
            filters=list(fields.items()),
            count=len(found.letters),
            partial=found.partial,
            scanned=found.scanned,
            total=found.total,
            listed=len(listed),
            groups=groups(listed, time.time()),
            action=url_for(f"events.bulk_{verb}"),
            hidden=list(form.items()),
            jobs=" ".join(x.job_id for x in listed),
        )

    def act(verb: Verb) -> Response:
        form = form_of(request.form, FILTERS)
        filters, errors = selection(form)
        job_ids = list(dict.fromkeys(JOB_ID.findall(request.form.get("jobs", ""))))[:AT_ONCE]
        every = verb is Verb.REQUEUE and request.form.get("handlers") == ALL_HANDLERS
        if filters is None or errors:
            # Not a form this page wrote (its confirmation shows no button then).
            outcome = BulkResult(verb, unmatched=len(job_ids))
        else:
            outcome = apply(DeadLetters(settings, connection()), verb, filters, job_ids, every)
        fields = _filters(form)
        log_action(
            f"events.bulk_{verb}",
            filters=fields,
            listed=len(job_ids),
            count=outcome.done,
            **{verb.past: outcome.done},
            skipped=outcome.skipped,
            all_handlers=every,
        )
        result: dict[str, Any] = {"bulk": str(verb), "done": outcome.done, "gone": outcome.gone}
        result["unmatched"] = outcome.unmatched
        if verb is Verb.REQUEUE and outcome.acted:
            put_back = [(x.meta.source, x.meta.event_id, x.meta.received_at) for x in outcome.acted]
            result["batch"] = requeued.remember(connection(), _keys(settings), put_back)
        return redirect(url_for("events.index", **fields, **result), 303)

    @blueprint.post("/bulk/requeue")
    def bulk_requeue() -> Response:
        return act(Verb.REQUEUE)

    @blueprint.post("/bulk/purge")
    def bulk_purge() -> Response:
        return act(Verb.PURGE)


def _filters(form: Mapping[str, str]) -> dict[str, Any]:
    """The search's filters that are set, for links and the log."""
    return {name: form[name] for name in FILTERS if form.get(name)}
