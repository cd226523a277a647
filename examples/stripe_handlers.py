"""Example handler of the source `stripe`, loaded by `make run` when WEBHOOK_HANDLERS is not
set and `stripe` is a configured source (a module a source: the worker warns of handlers for
sources that are not configured, which is a typo's symptom in a real deployment).
"""

from __future__ import annotations

import logging

from workers import Event, handler

log = logging.getLogger("webhooks.examples")


@handler("stripe", "invoice.paid")
def invoice_paid(event: Event) -> None:
    # Stripe's event envelope: the invoice is `data.object` (what `webhooks send --data` sets).
    invoice = event.payload["data"]["object"]
    log.info("invoice %s paid (event %s)", invoice.get("id"), event.id)
