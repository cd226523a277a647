"""The confirmation of a bulk action over every shard (`front_bulk.py`): what the search
matches, shard by shard and by error, and the form that acts. Changes nothing. No script;
every value escaped (errors, sources and types are a sender's or a handler's text)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from markupsafe import escape

from workers.ops.events_page.bulk import Verb, groups
from workers.ops.events_page.moments import Moment

if TYPE_CHECKING:
    from workers.ops.front_bulk import ShardLetters


def confirmation(
    verb: Verb,
    fields: dict[str, str],
    errors: list[str],
    found: list[ShardLetters],
    down: list[tuple[int, str]],
    now: float,
) -> str:
    back = "/events?" + urlencode(fields)
    body = f'<p><a href="{escape(back)}">&larr; the search</a></p>'
    body += "".join(f"<p class='error'>{escape(e)}</p>" for e in errors)
    shown = "".join(f"<li>{escape(k)}: <code>{escape(v)}</code></li>" for k, v in fields.items())
    body += f"<ul id='filters'>{shown or '<li>none: every dead letter</li>'}</ul>"
    if errors:
        return body
    if down:
        said = "".join(f"<li>shard {shard}: {escape(line)}</li>" for shard, line in down)
        body += f"<p>Not searched (did not answer): nothing is done there.</p><ul>{said}</ul>"
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
        f"{rows}</table>"
    )
    body += _groups(found, now)
    hidden = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    hidden += "".join(
        f'<input type="hidden" name="jobs-{s.shard}" '
        f'value="{escape(" ".join(x.job_id for x in s.listed))}">'
        for s in found
    )
    if verb is Verb.REQUEUE:
        buttons = (
            "<p>Each goes back on its shard's queue with its full retry budget.</p>"
            f'<button id="confirm" type="submit" name="handlers" value="failed">Requeue '
            f"{listed}, failed handlers</button> "
            f'<button id="confirm-all" type="submit" name="handlers" value="all">Requeue '
            f"{listed}, all handlers</button>"
        )
    else:
        buttons = (
            "<p id='claimed'>Each is deleted for good. Its event id stays claimed until the "
            "dedupe TTL (WEBHOOK_DEDUPE_TTL) ends: the same event sent again is still answered "
            "as a duplicate and does not run.</p>"
            f'<button id="confirm" type="submit">Purge {listed}</button>'
        )
    return body + f'<form method="post" action="/events/bulk/{verb}">{hidden}{buttons}</form>'


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
