"""Replaying missed events: from Stripe's events API, GitHub's deliveries API, or the ledger.

Deduplication protects against too many deliveries; replay against too few. Everything
goes through the receiver's own claim, so replaying a window twice, or one that mostly
arrived, only enqueues what is missing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from redis import Redis

from app.intake import ENQUEUE_ONLY, SyncIntake
from app.keys import RQ_QUEUES_SET, Keys
from app.providers.base import Delivery
from app.settings import Settings, SourceConfig
from workers.deadletters import DeadLetters
from workers.ledger import EventLedger

ATTEMPTS = 5
PENDING = {"queued", "running", "retrying"}


class ReplayError(Exception):
    """The provider's API could not be read; the message says why, never with the key."""


@dataclass
class Counts:
    fetched: int = 0
    new: int = 0
    already_had: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        return {
            "fetched": self.fetched,
            "new": self.new,
            "already_had": self.already_had,
            **self.extra,
        }


class Api:
    """GETs and POSTs with bounded retries on 429 (honouring Retry-After), 5xx and network
    errors; any other error answer stops the replay with the API's own message."""

    def __init__(self, client: httpx.Client, sleep: Callable[[float], None] | None = None) -> None:
        self.client = client
        self.sleep = sleep or time.sleep

    def call(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        delay = 1.0
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = self.client.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                if attempt == ATTEMPTS:
                    raise ReplayError(f"cannot reach {url}: {type(exc).__name__}") from None
                self.sleep(delay)
                delay *= 2
                continue
            if response.status_code == 429 or response.status_code >= 500:
                if attempt == ATTEMPTS:
                    raise ReplayError(f"{url} answered {response.status_code} {ATTEMPTS} times")
                wait = response.headers.get("retry-after", "")
                self.sleep(min(float(wait), 60.0) if wait.replace(".", "", 1).isdigit() else delay)
                delay *= 2
                continue
            if response.status_code >= 400:
                raise ReplayError(
                    f"{url} answered {response.status_code}: {_api_message(response)}"
                )
            return response
        raise AssertionError("unreachable")


def _api_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message", ""))[:200]
    return str(body.get("message", ""))[:200] if isinstance(body, dict) else ""


def stripe_events(api: Api, base: str, since: float, until: float | None) -> Iterator[Any]:
    """Stripe's List Events, newest first, paged with starting_after while has_more."""
    params: dict[str, Any] = {"created[gte]": int(since), "limit": 100}
    if until is not None:
        params["created[lte]"] = int(until)
    while True:
        page = api.call("GET", f"{base.rstrip('/')}/v1/events", params=params).json()
        events = page.get("data") or []
        yield from events
        if not page.get("has_more") or not events:
            return
        params["starting_after"] = events[-1]["id"]


def replay_stripe(
    settings: Settings,
    source: SourceConfig,
    redis: Redis,
    client: httpx.Client,
    since: float,
    until: float | None,
    progress: Callable[[Counts], None],
) -> Counts:
    if settings.stripe_api_key is None:
        raise ReplayError("STRIPE_API_KEY is not set")
    client.headers["Authorization"] = f"Bearer {settings.stripe_api_key.get_secret_value()}"
    intake, counts = SyncIntake(settings, redis), Counts()
    for event in stripe_events(Api(client), settings.stripe_api_base, since, until):
        counts.fetched += 1
        delivery = Delivery(
            event_id=str(event["id"]),
            event_type=str(event.get("type", "")),
            headers={"x-webhook-replayed-from": "stripe-api"},
        )
        raw = json.dumps(event, separators=(",", ":")).encode()
        if intake.claim_and_enqueue(source, delivery, raw, time.time()).accepted:
            counts.new += 1
        else:
            counts.already_had += 1
        progress(counts)
    return counts


def _next_link(response: httpx.Response) -> str | None:
    link = response.links.get("next")
    return link.get("url") if link else None


def replay_github(
    settings: Settings,
    source: SourceConfig,
    redis: Redis,
    client: httpx.Client,
    repo: str,
    hook_id: int,
    since: float,
    until: float | None,
    progress: Callable[[Counts], None],
) -> Counts:
    """List the hook's deliveries in the window and ask GitHub to redeliver the failed ones
    we do not have; the redeliveries arrive signed, through the receiver."""
    if settings.github_token is None:
        raise ReplayError("GITHUB_TOKEN is not set")
    client.headers.update(
        {
            "Authorization": f"Bearer {settings.github_token.get_secret_value()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }
    )
    api, keys, counts = Api(client), Keys(settings.webhook_key_prefix, ""), Counts()
    counts.extra = {"failed": 0, "redelivered": 0}
    hook = f"{settings.github_api_base.rstrip('/')}/repos/{repo}/hooks/{hook_id}"
    url: str | None = f"{hook}/deliveries?per_page=100"
    latest: dict[str, dict[str, Any]] = {}
    while url:
        response = api.call("GET", url)
        older_than_window = False
        for delivery in response.json():
            when = datetime.fromisoformat(delivery["delivered_at"]).timestamp()
            if when < since:
                older_than_window = True
                continue
            if until is not None and when > until:
                continue
            counts.fetched += 1
            guid = delivery["guid"]
            # A redelivery keeps the guid: judge each event by its newest delivery.
            if guid not in latest or delivery["id"] > latest[guid]["id"]:
                latest[guid] = delivery
        url = None if older_than_window else _next_link(response)
    for guid, delivery in latest.items():
        if redis.exists(keys.seen(source.name, guid), keys.event(source.name, guid)):
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


def replay_ledger(
    settings: Settings,
    source: SourceConfig,
    redis: Redis,
    since: float,
    until: float | None,
    status: str | None,
    progress: Callable[[Counts], None],
) -> Counts:
    """Re-run stored events: dead letters are requeued with a full budget; events whose job
    is gone are enqueued again from the stored payload; pending ones are left alone."""
    keys = Keys(settings.webhook_key_prefix, settings.webhook_queue)
    ledger, dead = EventLedger(keys, redis), DeadLetters(settings, redis)
    intake, enqueue = SyncIntake(settings, redis), redis.register_script(ENQUEUE_ONLY)
    counts = Counts(extra={"requeued": 0, "enqueued": 0, "pending": 0})
    for record in ledger.find(source.name, status, since, until):
        counts.fetched += 1
        job_id = str(record.get("job_id", ""))
        if dead.requeue(job_id):
            counts.extra["requeued"] += 1
        elif record.get("status") in PENDING and redis.exists(keys.job(job_id)):
            counts.extra["pending"] += 1
            counts.already_had += 1
            continue
        else:
            full = ledger.get(source.name, str(record["id"])) or {}
            delivery = Delivery(
                event_id=str(record["id"]),
                event_type=str(record.get("type", "")),
                headers={"x-webhook-replayed-from": "ledger"},
            )
            raw = str(full.get("payload", "")).encode()
            fields = intake.job_fields(source, delivery, raw, float(record["received_at"]))
            redis.delete(keys.job(job_id))  # a finished job's leftover hash
            enqueue(keys=[keys.job(job_id), keys.queue, RQ_QUEUES_SET], args=[job_id, *fields])
            redis.hset(keys.event(source.name, str(record["id"])), "status", "queued")
            counts.extra["enqueued"] += 1
        counts.new += 1
        progress(counts)
    return counts
