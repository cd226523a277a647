"""The front's own pages on a cluster (`dashboard_front.py`): the shard list and finding an
event by its id in whichever shard holds it. No script; every value escaped (an error line
may quote what a server said, an id is a provider's text)."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Response
from markupsafe import escape
from redis import Redis
from redis.exceptions import RedisError

from app.connection import OPERATOR, shard_client, slot_map
from app.keys import Keys
from app.redis_errors import what_went_wrong
from app.settings import Settings
from app.shards import Shards
from workers.ops.shard_reads import read_each


def find_page(settings: Settings, shards: Shards, event_id: str, source: str | None) -> Response:
    """An event id (in any source, or the one given) looked up in every shard: the event's
    page in its shard, or which shards hold one, or that none does (and which did not say)."""
    if not event_id or len(event_id) > 4096 or (source and source not in settings.sources):
        return page("Find an event", "<p>Give an event id (and a configured source).</p>", 400)
    found, down = _holders(settings, shards, event_id, source or None)
    if len(found) == 1:
        return Response(status=303, headers={"Location": _event_page(*found[0], event_id)})
    links = "".join(
        f'<li><a href="{escape(_event_page(shard, name, event_id))}">'
        f"{escape(name)} in shard {shard}</a></li>"
        for shard, name in found
    )
    said = "".join(f"<li>shard {shard}: {escape(line)}</li>" for shard, line in down)
    body = (
        f"<p>Events with that id:</p><ul>{links}</ul>"
        if found
        else ("<p>No event with that id in the shards that answered.</p>")
    )
    if down:
        body += f"<p>Not searched (did not answer):</p><ul>{said}</ul>"
    return page("Find an event", body, 200 if found else 404)


def _event_page(shard: int, source: str, event_id: str) -> str:
    return f"/shards/{shard}/events/event?" + urlencode({"source": source, "id": event_id})


def _holders(
    settings: Settings, shards: Shards, event_id: str, source: str | None
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(shard, source) of each ledger record of the id; (shard, why) of each shard that
    could not be asked."""
    names = [source] if source else list(settings.sources)

    def held(_: int, client: Redis, keys: Keys) -> list[str]:
        with client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.exists(keys.event(name, event_id))
            counts = pipe.execute()
        return [name for name, count in zip(names, counts, strict=True) if count]

    found: list[tuple[int, str]] = []
    down: list[tuple[int, str]] = []
    for shard, got in read_each(settings, shards, held).items():
        if isinstance(got, str):
            down.append((shard, got))
        else:
            found += [(shard, name) for name in got]
    return found, down


# As the Events page's: no script; its stylesheet, and forms posting to this origin only.
CSP = (
    "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)


def page(title: str, body: str, status: int = 200, styled: bool = False) -> Response:
    """A page of the front's: no script, every value escaped by its caller. `styled`: with
    the Events page's stylesheet (the chart's legend, the statuses)."""
    sheet = '<link rel="stylesheet" href="/style.css">' if styled else ""
    page = Response(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>webhooks: {escape(title)}</title>{sheet}</head><body><h1>{escape(title)}</h1>"
        f"<nav><a href='/'>Shards</a> · <a href='/events'>Events in every shard</a></nav>"
        f"{body}</body></html>",
        status,
        mimetype="text/html",
    )
    page.headers["Content-Security-Policy"] = CSP
    page.headers["Cache-Control"] = "no-store"
    return page


def shard_list_body(settings: Settings, shards: Shards) -> str:
    """Each shard: its primary and whether it answers, and links to its pages. No script,
    every value escaped (an error line may quote what a server said)."""
    target = settings.cluster_target
    assert target is not None
    rows = []
    for shard in shards:
        primary, state = _state(settings, shards, shard)
        rows.append(
            f"<tr><td>{shard}</td><td>{escape(primary)}</td><td>{escape(state)}</td>"
            f'<td><a href="/shards/{shard}/">rq-dashboard</a> · '
            f'<a href="/shards/{shard}/events">Events</a></td></tr>'
        )
    return (
        f"<p>{escape(target.where)}: {shards.count} shards. Each shard's queue, registries "
        "and events are on its own pages.</p>"
        '<p><a href="/events">Search the events of every shard</a></p>'
        '<form method="get" action="/events/find"><label>Find an event by id '
        '<input name="id" size="30"></label> <button type="submit">Find</button></form>'
        "<table><tr><th>shard</th><th>primary</th><th>state</th><th>pages</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _state(settings: Settings, shards: Shards, shard: int) -> tuple[str, str]:
    """The shard's primary (as the slot map says) and whether it answers, in one line."""
    target = settings.cluster_target
    assert target is not None
    try:
        primary = str(slot_map(target).owner(shards.slot(shard)))
    except RedisError as exc:
        return "-", "down: " + what_went_wrong(exc, target)
    client = shard_client(settings, shard, OPERATOR)
    try:
        client.ping()
    except RedisError as exc:
        return primary, "down: " + what_went_wrong(exc, target)
    finally:
        client.close()
    return primary, "answers"
