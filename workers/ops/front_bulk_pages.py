"""The front's bulk actions as pages (`front_bulk.py`): the buttons under the search of every
shard, the confirmation (what the search matches, shard by shard and by error, and the form
that acts; it changes nothing), and the result at the top of the search it redirects to. No
script; every value escaped (errors, sources and types are a sender's or a handler's text,
a link's fields anyone's)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from urllib.parse import urlencode

from flask import Response
from markupsafe import escape

from app.settings import Settings
from app.shards import Shards
from workers.ops.events_page import requeued
from workers.ops.events_page.bulk import SCANNED, BulkResult, Verb, groups
from workers.ops.events_page.moments import Moment
from workers.ops.front_bulk import (
    COUNTED,
    Gathered,
    ShardLetters,
    Unanswered,
    filters_of,
    gather,
    selection,
)
from workers.ops.front_pages import page

SHARD_LIST = re.compile(r"[0-9]{1,4}(,[0-9]{1,4})*")
UNANSWERED = {
    Unanswered.UNREACHED: "its dashboard could not be reached (its log says why): nothing was "
    "done there, its dead letters are as they were",
    Unanswered.UNSURE: "it did not say what it did (no answer in time, or an error: its log "
    "says which): some of its dead letters may have been acted on; search again to see what "
    "is left",
}


def buttons(settings: Settings, shards: Shards, args: Mapping[str, str]) -> str:
    """Under the front's search: how many dead letters it matches (the COUNTED newest
    failures of each shard), and links (GET) to the confirmation. Nothing when it matches
    none or cannot take a bulk action."""
    filters, errors = selection(settings, args)
    if filters is None or errors:
        return ""
    gathered = gather(settings, shards, filters, COUNTED)
    if not gathered.count:
        return ""
    fields = filters_of(args)
    n, more = gathered.count, " or more" if gathered.partial else ""
    links = " ".join(
        f'<a id="bulk-{verb}" href="{escape("/events/bulk?" + urlencode({"verb": verb} | fields))}"'
        f">{verb.capitalize()} these</a>"
        for verb in (Verb.REQUEUE, Verb.PURGE)
    )
    where = len(gathered.shards)
    return (
        f'<p id="bulk">{n}{more} dead letter{"" if n == 1 else "s"} in {where} '
        f"shard{'' if where == 1 else 's'} match this search: {links}</p>"
    )


def confirm(settings: Settings, shards: Shards, args: Mapping[str, str]) -> Response:
    try:
        verb = Verb(args.get("verb", ""))
    except ValueError:
        return page("Not found", "<p>No such action.</p>", 404)
    filters, errors = selection(settings, args)
    # As many dead letters read in all as one Redis's confirmation reads.
    scanned = SCANNED // shards.count
    gathered = Gathered()
    if filters is not None and not errors:
        gathered = gather(settings, shards, filters, scanned)
    body = _confirmation(verb, filters_of(args), errors, gathered, time.time())
    return page(f"{verb.capitalize()} dead letters in every shard", body, 400 if errors else 200)


def _confirmation(
    verb: Verb, fields: dict[str, str], errors: list[str], gathered: Gathered, now: float
) -> str:
    back = "/events?" + urlencode(fields)
    body = f'<p><a href="{escape(back)}">&larr; the search</a></p>'
    body += "".join(f"<p class='error'>{escape(e)}</p>" for e in errors)
    shown = "".join(f"<li>{escape(k)}: <code>{escape(v)}</code></li>" for k, v in fields.items())
    body += f"<ul id='filters'>{shown or '<li>none: every dead letter</li>'}</ul>"
    if errors:
        return body
    if gathered.down:
        said = "".join(f"<li>shard {s}: {escape(line)}</li>" for s, line in gathered.down)
        body += f"<p>Not searched (did not answer): nothing is done there.</p><ul>{said}</ul>"
    found = gathered.shards
    listed = sum(len(s.listed) for s in found)
    if not listed:
        return body + "<p id='count'>No dead letter matches this search. Nothing has changed.</p>"
    rows = "".join(
        f"<tr><td>{s.shard}</td><td>{len(s.found.letters)}"
        f"{' or more' if s.found.partial else ''}</td><td>{len(s.listed)}</td></tr>"
        for s in found
    )
    body += (
        f"<p id='count'>{listed} dead letter{'' if listed == 1 else 's'} to {verb}, "
        "shard by shard (in each, those that failed most recently, at most 1,000 at once: open "
        "this page again afterwards for the rest). Nothing has changed yet.</p>"
        "<table id='shards'><tr><th>shard</th><th>matching</th><th>acted on</th></tr>"
        f"{rows}</table>{_groups(found, now)}"
    )
    hidden = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    hidden += "".join(
        f'<input type="hidden" name="jobs-{s.shard}" '
        f'value="{escape(" ".join(x.job_id for x in s.listed))}">'
        for s in found
    )
    form = f'<form method="post" action="/events/bulk/{verb}">{hidden}{_buttons(verb, listed)}'
    return body + form + "</form>"


def _buttons(verb: Verb, listed: int) -> str:
    if verb is Verb.REQUEUE:
        return (
            "<p>Each goes back on its shard's queue with its full retry budget.</p>"
            f'<button id="confirm" type="submit" name="handlers" value="failed">Requeue '
            f"{listed}, failed handlers</button> "
            f'<button id="confirm-all" type="submit" name="handlers" value="all">Requeue '
            f"{listed}, all handlers</button>"
        )
    return (
        "<p id='claimed'>Each is deleted for good. Its event id stays claimed until the "
        "dedupe TTL (WEBHOOK_DEDUPE_TTL) ends: the same event sent again is still answered "
        "as a duplicate and does not run.</p>"
        f'<button id="confirm" type="submit">Purge {listed}</button>'
    )


def _groups(found: list[ShardLetters], now: float) -> str:
    """The listed letters of every shard by error, as `webhooks dead list --group-by error`."""
    letters = [letter for s in found for letter in s.listed]
    rows = "".join(
        f"<tr><td>{g.count}</td><td>{escape((g.error or '-')[:500])}</td>"
        f"<td>{escape(', '.join(g.sources))}</td><td>{escape(', '.join(g.types) or '-')}</td>"
        f"<td>{_when(g.first_failed)}</td><td>{_when(g.last_failed)}</td></tr>"
        for g in groups(letters, now)
    )
    return (
        "<table id='groups'><tr><th>count</th><th>error</th><th>sources</th><th>types</th>"
        f"<th>first failed</th><th>last failed</th></tr>{rows}</table>"
    )


def _when(at: Moment | None) -> str:
    if at is None:
        return ""
    return (
        f'<time datetime="{escape(at.exact)}" title="{escape(at.exact)}">{escape(at.text)}</time>'
    )


def banner(shards: Shards, args: Mapping[str, str]) -> str:
    """A bulk action's result at the top of the front's search: fixed words around counts,
    a link to each shard's requeued events, and the shards that gave no result."""
    result = BulkResult.said(args)
    if result is None:
        return ""
    lines = [f'<p id="bulk-done">{escape(result.sentence())}</p>']
    links = [
        f'<a href="/shards/{shard}/events?{urlencode({"requeued": token})}#search">'
        f"shard {shard}</a>"
        for shard in shards
        if requeued.valid(token := args.get(f"batch-{shard}", ""))
    ]
    if result.verb is Verb.REQUEUE and links:
        lines.append(
            f'<p id="bulk-requeued">The requeued events, shard by shard: {", ".join(links)}</p>'
        )
    for why, sentence in UNANSWERED.items():
        named = args.get(str(why), "")
        if not SHARD_LIST.fullmatch(named):
            continue
        listed = [s for s in named.split(",") if int(s) < shards.count]
        if listed:
            lines.append(
                f'<p id="bulk-{why}" class="error">Shard {", ".join(listed)}: {sentence}.</p>'
            )
    return '<div id="bulk-result" role="status">' + "".join(lines) + "</div>"
