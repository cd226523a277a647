"""Example handlers of the source `inbound`, loaded by `make run` when WEBHOOK_HANDLERS is
not set and `inbound` is a configured source.

Point WEBHOOK_HANDLERS at your own modules (comma-separated) to replace them.
"""

from __future__ import annotations

import logging

from workers import Event, PermanentError, handler

log = logging.getLogger("webhooks.examples")


@handler("inbound", "order.created")
def sync_order(event: Event) -> None:
    log.info("order %s received (attempt %d)", event.payload.get("id"), event.attempt)


@handler("inbound", "demo.flaky")
def always_fails(event: Event) -> None:
    # Retried with WEBHOOK_RETRY_INTERVALS, then dead-lettered: try `webhooks dead list`.
    raise RuntimeError("downstream API answered 502")


@handler("inbound", "demo.invalid")
def rejects(event: Event) -> None:
    raise PermanentError("payload cannot be processed; retrying will not help")
