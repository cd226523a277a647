"""Requeue or purge the dead letters a search of every shard matches, on the dashboard's front.

Each shard's dead letters are found as its own Events page finds them (`events_page/bulk.py`:
its failed registry, newest failures first, the search's filters), all shards at once; the
confirmation counts them shard by shard and changes nothing. The action is each shard's own:
the front posts that shard's listed jobs to its process, with the person's login and origin,
which it checks again, so that what is done, logged and remembered is exactly what that
shard's page does (one requeued or purged meanwhile is skipped there). The shards are posted
to at once; one that cannot be reached is named (nothing was done there), and so is one that
did not say what it did (it may have done part: a search shows what is left).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from flask import Response
from redis import Redis

from app.keys import Keys
from app.settings import Settings
from app.shards import Shards
from workers.ops.dashboard_guard import log_action
from workers.ops.events_page import requeued
from workers.ops.events_page.bulk import (
    AT_ONCE,
    JOB_ID,
    SCANNED,
    BulkResult,
    Filters,
    Found,
    Letter,
    Verb,
    find,
    selected,
)
from workers.ops.events_page.search_form import FILTERS, form_of, parse_query
from workers.ops.shard_reads import read_each

# A bulk requeue's list is one shard's: searched there, not on the front.
REQUEUED_ON_SHARD = "A list of requeued events is searched on its shard's page."
# The dead letters the search's page counts in each shard on every view (newest failures
# first; more are said as "or more"): an incident's thousands are not read at each click.
COUNTED = 200


class Unanswered(StrEnum):
    """A shard's action that gave no result."""

    UNREACHED = "unreached"  # its process could not be reached: nothing was sent
    UNSURE = "unsure"  # sent, but no result came back (a timeout, an error): maybe part done


# Posts a form to a shard's process (`dashboard_front.py`), the path under /shards/<n>/.
PostToShard = Callable[[int, str, dict[str, str]], httpx.Response | Unanswered]


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
    if query.requeued:
        errors.append(REQUEUED_ON_SHARD)
    return selected(query, errors, None), errors


def gather(
    settings: Settings, shards: Shards, filters: Filters, scanned: int = SCANNED
) -> Gathered:
    def one(_: int, client: Redis, keys: Keys) -> Found:
        return find(client, keys, filters, scanned)

    gathered = Gathered()
    for shard, got in read_each(settings, shards, one).items():
        if isinstance(got, str):
            gathered.down.append((shard, got))
        elif got.letters:
            gathered.shards.append(ShardLetters(shard, got))
    return gathered


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a bulk action over the shards did: the sum, and each shard's part."""

    total: BulkResult
    batches: dict[int, str]  # a requeue's token per shard, for the link to its events
    unanswered: dict[int, Unanswered]


def act(shards: Shards, verb: Verb, form: Mapping[str, str], post: PostToShard) -> Response:
    """Each shard's listed jobs, to that shard's own action; the sum, to the front's search."""
    fields = filters_of(form)
    listed = {
        shard: " ".join(jobs)
        for shard in shards
        if (jobs := JOB_ID.findall(form.get(f"jobs-{shard}", ""))[:AT_ONCE])
    }
    handlers = form.get("handlers", "")

    def send(shard: int) -> httpx.Response | Unanswered:
        return post(
            shard, f"events/bulk/{verb}", {**fields, "jobs": listed[shard], "handlers": handlers}
        )

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(listed)))) as pool:
        answers = dict(zip(listed, pool.map(send, listed), strict=True))
    outcome = _summed(verb, answers)
    log_action(
        f"front.bulk_{verb}",
        filters=fields,
        listed={str(s): len(jobs.split()) for s, jobs in listed.items()},
        count=outcome.total.done,
        skipped=outcome.total.skipped,
        unanswered={str(s): str(why) for s, why in outcome.unanswered.items()},
    )
    result = {"bulk": str(verb), "done": outcome.total.done, "gone": outcome.total.gone}
    result |= {"unmatched": outcome.total.unmatched}
    result |= {f"batch-{shard}": token for shard, token in outcome.batches.items()}
    for why in Unanswered:
        if named := [str(s) for s, w in outcome.unanswered.items() if w is why]:
            result[str(why)] = ",".join(named)
    location = "/events?" + urlencode({**fields, **result})
    return Response(status=303, headers={"Location": location})


def _summed(verb: Verb, answers: dict[int, httpx.Response | Unanswered]) -> Outcome:
    total = BulkResult(verb)
    batches: dict[int, str] = {}
    unanswered: dict[int, Unanswered] = {}
    for shard, answer in answers.items():
        said = _said(answer) if isinstance(answer, httpx.Response) else None
        if said is None:
            unanswered[shard] = answer if isinstance(answer, Unanswered) else Unanswered.UNSURE
            continue
        result, batch = said
        total = BulkResult(
            verb,
            total.done + result.done,
            total.gone + result.gone,
            total.unmatched + result.unmatched,
        )
        if batch:
            batches[shard] = batch
    return Outcome(total, batches, unanswered)


def _said(answer: httpx.Response) -> tuple[BulkResult, str] | None:
    """What a shard's action did, from the page it sent the person to (`bulk_views.py`)."""
    if answer.status_code != 303:
        return None
    query = urlsplit(answer.headers.get("location", "")).query
    args = {k: v[0] for k, v in parse_qs(query).items()}
    result = BulkResult.said(args)
    if result is None:
        return None
    batch = args.get("batch", "")
    return result, batch if requeued.valid(batch) else ""


def filters_of(args: Mapping[str, str]) -> dict[str, str]:
    """The search's filters that are set, for links and the shards' forms."""
    return {name: value for name, value in form_of(args, FILTERS).items() if value}
