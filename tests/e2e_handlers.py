"""Handlers the end-to-end tests load into the real worker through WEBHOOK_HANDLERS.

They report to Redis, since they run in another process: to EFFECTS_REDIS_URL when a test
sets it (a Redis the worker's cut link does not lead to), else to the worker's REDIS_URL.
"""

from __future__ import annotations

import os
import time

from redis import Redis

from workers import Event, handler


def _redis() -> Redis:
    return Redis.from_url(os.environ.get("EFFECTS_REDIS_URL") or os.environ["REDIS_URL"])


@handler("inbound", "order.created")
def count(event: Event) -> None:
    _redis().incr(f"effects:{event.id}")


@handler("inbound", "order.flaky")
def flaky(event: Event) -> None:
    # Whether to fail is read before the effect is counted: a test that clears the flag once
    # it sees the first attempt's effect (test_sentry.py) changes the next attempt only.
    r = _redis()
    failing = r.exists(f"fail:{event.id}")
    r.incr(f"effects:{event.id}")
    if failing:
        raise RuntimeError("downstream is down")


@handler("inbound", "order.fails_once")
def fails_once(event: Event) -> None:
    # Fails its first attempt whatever the timing: a retry then a success, every time.
    _redis().incr(f"effects:{event.id}")
    if event.attempt == 1:
        raise RuntimeError("downstream is down")


@handler("inbound", "order.slow")
def slow(event: Event) -> None:
    r = _redis()
    r.incr(f"starts:{event.id}")
    # A test may shorten the sleep of a later attempt through Redis.
    time.sleep(float(r.get(f"sleep:{event.id}") or event.payload.get("seconds", 3)))
    r.incr(f"effects:{event.id}")


@handler("inbound", "order.hostile")
def hostile(event: Event) -> None:
    # A careless handler that echoes payload text into its error, as real ones do.
    raise ValueError(f"cannot parse {event.payload.get('note')}")


@handler("inbound", "order.echo")
def echo(event: Event) -> None:
    # A handler that raises with the payload itself: its keys are the sender's text too.
    raise ValueError(event.payload)


@handler("inbound", "order.leaky")
def leaky(event: Event) -> None:
    # An error that quotes a configured secret (a client built with it, say).
    raise RuntimeError(f"refused with {os.environ['WEBHOOK_SIGNING_SECRET']}")


# A type that is itself markup: dispatch needs it exactly, every page must show it as text.
HOSTILE_TYPE = "order.<img src=x onerror=\"window.__xss='type'\">"


@handler("inbound", HOSTILE_TYPE)
def hostile_type(event: Event) -> None:
    raise ValueError(f"cannot parse {event.payload.get('note')}")


# Three handlers of one event, the middle one slow: a worker killed while it runs has
# finished the first and not started the last.
@handler("inbound", "order.fanout")
def fanout_first(event: Event) -> None:
    _redis().incr(f"effects:first:{event.id}")


@handler("inbound", "order.fanout")
def fanout_slow(event: Event) -> None:
    r = _redis()
    r.incr(f"starts:{event.id}")
    time.sleep(float(r.get(f"sleep:{event.id}") or 0))
    r.incr(f"effects:{event.id}")


@handler("inbound", "order.fanout")
def fanout_last(event: Event) -> None:
    _redis().incr(f"effects:last:{event.id}")


@handler("inbound", "order.fails_first_timed")
def fails_first_timed(event: Event) -> None:
    # Each attempt's start by Redis's clock, the one every worker shares; the first fails.
    r = _redis()
    seconds, micros = r.time()
    r.rpush(f"attempt_times:{event.id}", seconds + micros / 1_000_000)
    if event.attempt == 1:
        raise RuntimeError("downstream is down")


@handler("inbound", "subscription.updated", entity="data.object.id", version="data.object.version")
def subscription_updated(event: Event) -> None:
    # The versions applied, in the order they were: the version guard's record.
    subscription = event.payload["data"]["object"]
    _redis().rpush(f"applied:{subscription['id']}", subscription["version"])
