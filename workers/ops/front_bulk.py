"""Requeue or purge the dead letters a search of every shard matches, on the dashboard's front.

Each shard's dead letters are found as its own Events page finds them (`events_page/bulk.py`:
its failed registry, newest failures first, the search's filters), all shards at once; the
confirmation counts them shard by shard and changes nothing. The action is each shard's own:
the front posts that shard's listed jobs to its process, with the person's login and origin,
which it checks again, so that what is done, logged and remembered is exactly what that
shard's page does (one requeued or purged meanwhile is skipped there). A shard that does not
answer is named, and the others act.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from flask import Response
from markupsafe import escape

from app.settings import Settings
from app.shards import Shards
from workers.ops.events_page import requeued
from workers.ops.events_page.bulk import (
    AT_ONCE,
    JOB_ID,
    BulkResult,
    Filters,
    Found,
    Letter,
    Verb,
    find,
)
from workers.ops.events_page.search_form import FILTERS, form_of, parse_query
from workers.ops.front_bulk_pages import confirmation
from workers.ops.front_pages import page
from workers.ops.shard_reads import read_each

# Posts a form to a shard's process (`dashboard_front.py`), the path under /shards/<n>/;
# None when that process could not be reached.
PostToShard = Callable[[int, str, dict[str, str]], httpx.Response | None]


@dataclass(frozen=True, slots=True)
class ShardLetters:
    shard: int
    found: Found

    @property
    def listed(self) -> list[Letter]:
        return self.found.letters[:AT_ONCE]


@dataclass
class Gathered:
    shards: list[ShardLetters] = field(default_factory=list)
    down: list[tuple[int, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(s.found.letters) for s in self.shards)

    @property
    def partial(self) -> bool:
        return any(s.found.partial for s in self.shards)


def selection(settings: Settings, args: Mapping[str, str]) -> tuple[Filters | None, list[str]]:
    """The search's dead-letter filters; None and why when it has none on the front."""
    query, errors = parse_query(args, list(settings.sources))
    if query.requeued:  # a bulk requeue's list is one shard's: on that shard's page
        errors.append("A list of requeued events is searched on its shard's page.")
    filters = Filters.of(query)
    if filters is None and not errors:
        errors.append("This search's status leaves dead letters out.")
    return filters, errors


def gather(settings: Settings, shards: Shards, filters: Filters) -> Gathered:
    read = read_each(settings, shards, lambda _, client, keys: find(client, keys, filters))
    gathered = Gathered()
    for shard, got in read.items():
        if isinstance(got, str):
            gathered.down.append((shard, got))
        elif got.letters:
            gathered.shards.append(ShardLetters(shard, got))
    return gathered


def buttons(settings: Settings, shards: Shards, args: Mapping[str, str]) -> str:
    """Under the front's search: how many dead letters it matches in every shard, and links
    (GET) to the confirmation. Nothing when it matches none or cannot take a bulk action."""
    filters, errors = selection(settings, args)
    if filters is None or errors:
        return ""
    gathered = gather(settings, shards, filters)
    if not gathered.count:
        return ""
    fields = _filters(args)
    more = " or more" if gathered.partial else ""
    n = gathered.count
    links = "".join(
        f'<a id="bulk-{verb}" href="{escape("/events/bulk?" + urlencode({"verb": verb} | fields))}"'
        f">{verb.capitalize()} these {n}</a> "
        for verb in (Verb.REQUEUE, Verb.PURGE)
    )
    return (
        f'<p id="bulk">{n}{more} dead letter{"" if n == 1 else "s"} in '
        f"{len(gathered.shards)} shard{'' if len(gathered.shards) == 1 else 's'} match this "
        f"search: {links}</p>"
    )


def confirm(settings: Settings, shards: Shards, args: Mapping[str, str]) -> Response:
    try:
        verb = Verb(args.get("verb", ""))
    except ValueError:
        return page("Not found", "<p>No such action.</p>", 404)
    filters, errors = selection(settings, args)
    gathered = gather(settings, shards, filters) if filters and not errors else Gathered()
    fields = _filters(args)
    body = confirmation(verb, fields, errors, gathered.shards, gathered.down, time.time())
    return page(f"{verb.capitalize()} dead letters in every shard", body, 400 if errors else 200)


def act(
    settings: Settings, shards: Shards, verb: Verb, form: Mapping[str, str], post: PostToShard
) -> Response:
    """Each shard's listed jobs, to that shard's own action; the sum, to the front's search."""
    fields = _filters(form)
    listed: dict[int, str] = {}
    for shard in shards:
        if jobs := JOB_ID.findall(form.get(f"jobs-{shard}", ""))[:AT_ONCE]:
            listed[shard] = " ".join(jobs)
    total = BulkResult(verb)
    failed: list[int] = []
    batches: dict[str, str] = {}
    for shard, listed_jobs in listed.items():
        sent = {**fields, "jobs": listed_jobs, "handlers": form.get("handlers", "")}
        answer = post(shard, f"events/bulk/{verb}", sent)
        said = _said(answer) if answer is not None else None
        if said is None:
            failed.append(shard)
            continue
        done, gone, unmatched, batch = said
        total = BulkResult(verb, total.done + done, total.gone + gone, total.unmatched + unmatched)
        if batch:
            batches[f"batch-{shard}"] = batch
    result = {"bulk": str(verb), "done": str(total.done), "gone": str(total.gone)}
    result |= {"unmatched": str(total.unmatched), **batches}
    if failed:
        result["failed"] = ",".join(map(str, failed))
    return Response(status=303, headers={"Location": "/events?" + urlencode({**fields, **result})})


def _said(answer: httpx.Response) -> tuple[int, int, int, str] | None:
    """What a shard's action did, from the page it sent the person to (`bulk_views.py`)."""
    if answer.status_code != 303:
        return None
    args = {
        k: v[0] for k, v in parse_qs(urlsplit(answer.headers.get("location", "")).query).items()
    }
    try:
        counts = [int(args[name]) for name in ("done", "gone", "unmatched")]
    except (KeyError, ValueError):
        return None
    batch = args.get("batch", "")
    return counts[0], counts[1], counts[2], batch if requeued.valid(batch) else ""


def banner(shards: Shards, args: Mapping[str, str]) -> str:
    """A bulk action's result at the top of the front's search: fixed words around counts,
    a link to each shard's requeued events, and the shards that did not act."""
    try:
        verb = Verb(args.get("bulk", ""))
        counts = [int(args.get(name, "0")) for name in ("done", "gone", "unmatched")]
    except ValueError:
        return ""
    if any(n < 0 for n in counts):
        return ""
    done, gone, unmatched = counts
    lines = [f'<p id="bulk-done">{escape(BulkResult(verb, done, gone, unmatched).sentence())}</p>']
    links = [
        f'<a href="/shards/{shard}/events?{urlencode({"requeued": token})}#search">'
        f"shard {shard}</a>"
        for shard in shards
        if requeued.valid(token := args.get(f"batch-{shard}", ""))
    ]
    if verb is Verb.REQUEUE and links:
        lines.append(
            f'<p id="bulk-requeued">The requeued events, shard by shard: {", ".join(links)}</p>'
        )
    failed = [s for s in args.get("failed", "").split(",") if s.isdigit() and int(s) < shards.count]
    if failed:
        lines.append(
            f'<p id="bulk-failed" class="error">Not done in shard {", ".join(failed)}: its '
            "dashboard did not answer (its log says why); its dead letters are as they were.</p>"
        )
    return '<div id="bulk-result" role="status">' + "".join(lines) + "</div>"


def _filters(args: Mapping[str, str]) -> dict[str, str]:
    """The search's filters that are set, for links and the shards' forms."""
    return {name: value for name, value in form_of(args, FILTERS).items() if value}
