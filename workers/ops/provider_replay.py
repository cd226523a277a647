"""Replaying missed events from the providers' APIs: Stripe's events, GitHub's deliveries.

What the API lists is fetched first; then each event goes through the receiver's own
claim (Stripe), or is asked to be redelivered unless we have it (GitHub), so replaying a
window twice, or one that mostly arrived, only enqueues what is missing. On a cluster the
fetching is done once, here, and each shard claims or looks up its own events in a process
of its own (`shard_fanout.py`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx
from redis import Redis

from app.providers.base import Delivery
from app.settings import Settings, SourceConfig
from app.shards import Shards
from workers.ops.provider_apis import Api, ReplayError, github_deliveries, stripe_events
from workers.ops.redact import Redactor
from workers.ops.replay_counts import Counts
from workers.ops.shard_fanout import Fanout

Progress = Callable[[Counts], None]


def _quiet(counts: Counts) -> None:
    """No progress bar: a shard's process, whose output is not shown."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """One event of Stripe's List Events, as a delivery and its body."""

    delivery: Delivery
    raw: bytes


def stripe_fetch(
    settings: Settings, client: httpx.Client, since: float, until: float | None
) -> Iterable[Fetched]:
    """Stripe's events as deliveries, fetched as they are read; the key is checked now."""
    if settings.stripe_api_key is None:
        raise ReplayError("STRIPE_API_KEY is not set")
    client.headers["Authorization"] = f"Bearer {settings.stripe_api_key.get_secret_value()}"
    return _fetched(Api(client, Redactor.of(settings)), settings, since, until)


def _fetched(api: Api, settings: Settings, since: float, until: float | None) -> Iterable[Fetched]:
    for event in stripe_events(api, settings.stripe_api_base, since, until):
        delivery = Delivery(
            event_id=str(event["id"]),
            event_type=str(event.get("type", "")),
            headers={"x-webhook-replayed-from": "stripe-api"},
        )
        yield Fetched(delivery, json.dumps(event, separators=(",", ":")).encode())


def claim_each(
    settings: Settings,
    source: SourceConfig,
    redis: Redis,
    fetched: Iterable[Fetched],
    progress: Progress = _quiet,
) -> Counts:
    """Each event through the receiver's claim: new, or already had."""
    from app.intake import SyncIntake  # here: it imports rq, under a shard's prefix on a cluster

    intake, counts = SyncIntake(settings, redis), Counts()
    for event in fetched:
        counts.fetched += 1
        if intake.claim_and_enqueue(source, event.delivery, event.raw, time.time()).accepted:
            counts.new += 1
        else:
            counts.already_had += 1
        progress(counts)
    return counts


def replay_stripe(
    fanout: Fanout,
    source: SourceConfig,
    client: httpx.Client,
    since: float,
    until: float | None,
    progress: Progress,
) -> Counts:
    settings = fanout.settings
    fetched = stripe_fetch(settings, client, since, until)
    if fanout.connection is not None:
        return claim_each(settings, source, fanout.connection, fetched, progress)
    # An event's shard, as the receiver picks it: Stripe's ids are in the signed body.
    shards = Shards(settings.webhook_shards)
    by_shard: dict[int, list[Fetched]] = {}
    for event in fetched:
        by_shard.setdefault(shards.of(source.name, event.delivery.event_id), []).append(event)

    def claim_mine(shard_settings: Settings, connection: Redis) -> Counts:
        mine = by_shard.get(shard_settings.shard or 0, [])
        return claim_each(shard_settings, source, connection, mine)

    counts = Counts()
    for _, answer in fanout.answered(claim_mine, sorted(by_shard)):
        counts.add(answer)
    progress(counts)
    return counts


def replay_github(
    fanout: Fanout,
    source: SourceConfig,
    client: httpx.Client,
    repo: str,
    hook_id: int,
    since: float,
    until: float | None,
    progress: Progress,
) -> Counts:
    """Ask GitHub to redeliver the failed deliveries of the window that we do not have; the
    redeliveries arrive signed, through the receiver."""
    settings = fanout.settings
    if settings.github_token is None:
        raise ReplayError("GITHUB_TOKEN is not set")
    client.headers.update(
        {
            "Authorization": f"Bearer {settings.github_token.get_secret_value()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }
    )
    api, counts = Api(client, Redactor.of(settings)), Counts()
    counts.extra = {"failed": 0, "redelivered": 0}
    hook = f"{settings.github_api_base.rstrip('/')}/repos/{repo}/hooks/{hook_id}"
    latest: dict[str, dict[str, Any]] = {}
    for delivery in github_deliveries(api, hook, since, until):
        counts.fetched += 1
        guid = delivery["guid"]
        # A redelivery keeps the guid: judge each event by its newest delivery.
        if guid not in latest or delivery["id"] > latest[guid]["id"]:
            latest[guid] = delivery
    had = _had(fanout, source, list(latest))
    if fanout.failed:  # which of its deliveries a silent shard has is unknown: ask nothing
        raise ReplayError("not every shard answered (named above): nothing was redelivered")
    for guid, delivery in latest.items():
        if guid in had:
            counts.already_had += 1
        elif 200 <= int(delivery.get("status_code") or 0) < 300:
            counts.already_had += 1  # delivered fine; our dedupe window has since closed
        else:
            counts.extra["failed"] += 1
            api.call("POST", f"{hook}/deliveries/{delivery['id']}/attempts")
            counts.extra["redelivered"] += 1
            counts.new += 1
        progress(counts)
    return counts


def _had(fanout: Fanout, source: SourceConfig, guids: list[str]) -> set[str]:
    """The deliveries we have (claimed, or in the ledger), asked of every shard: a cluster's
    shard of a delivery is the receiver's choice (`Intake.shard_of`), which this need not
    repeat for the few hundred ids of a window."""

    def have(settings: Settings, connection: Redis) -> set[str]:
        keys = settings.keys
        with connection.pipeline(transaction=False) as pipe:
            for guid in guids:
                pipe.exists(keys.seen(source.name, guid), keys.event(source.name, guid))
            found = pipe.execute() if guids else []
        return {guid for guid, count in zip(guids, found, strict=True) if count}

    return {guid for _, found in fanout.answered(have) for guid in found}
