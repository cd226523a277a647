"""Handlers the HA tests load into the real worker (WEBHOOK_HANDLERS=tests.ha.handlers).

They count their effects in Redis through the same connection factory as the worker, so
they follow the primary that Sentinel names (and TLS, ACL users) as the worker does.
"""

from __future__ import annotations

import time
from functools import cache

from redis import Redis

from app.connection import sync_client
from app.settings import Settings
from workers import Event, handler


@cache
def _redis() -> Redis:
    return sync_client(Settings.load())


def applied(event: Event) -> None:
    """The effect, counted, and when it was applied (the tests report recovery times)."""
    with _redis().pipeline(transaction=False) as pipe:
        pipe.incr(f"effects:{event.id}")
        pipe.zadd("applied", {f"{event.id}:{event.attempt}": time.time()})
        pipe.execute()


@handler("inbound", "order.created")
def count(event: Event) -> None:
    applied(event)


@handler("inbound", "order.slowish")
def slowish(event: Event) -> None:
    """A handler that takes a moment: under load the worker falls behind, so a Redis crash
    catches jobs queued, taken and running."""
    time.sleep(0.03)
    applied(event)


@handler("inbound", "order.flaky")
def flaky(event: Event) -> None:
    """Fails while `fail:<id>` exists: its retry is scheduled, for the scheduler to run."""
    applied(event)
    if _redis().exists(f"fail:{event.id}"):
        raise RuntimeError("downstream is down")
