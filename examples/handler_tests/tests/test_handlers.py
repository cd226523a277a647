"""Testing myshop's handlers with rq-webhook-receiver's pytest fixtures, and its own app."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from myshop.handlers import ORDERS, PAID
from myshop.main import app

from workers.testing import Deliver, EventFactory, ReceiverClient, RequestSigner

# Over what the environment and .env say; no secret is needed: the fixtures make them up.
pytestmark = pytest.mark.webhooks_settings(WEBHOOK_SOURCES="stripe,shop:shopify")


def test_a_paid_invoice_is_recorded(webhook_event: EventFactory, deliver: Deliver) -> None:
    event = webhook_event("stripe", "invoice.paid", {"id": "in_1", "amount_paid": 1200})
    outcome = deliver(event)
    assert outcome.states == {"record_payment": "done", "audit": "done"}
    assert PAID["in_1"] == 1200


def test_an_invoice_without_an_amount_is_dead_lettered(
    webhook_event: EventFactory, deliver: Deliver
) -> None:
    outcome = deliver(webhook_event("stripe", "invoice.paid", {"id": "in_2"}))
    assert outcome.status == "failed"
    assert outcome.permanent  # a PermanentError: no retries
    # Each handler has its own turn: audit ran, and will not run again for this event.
    assert outcome.states == {"record_payment": "permanent", "audit": "done"}
    assert "amount_paid" in str(outcome["record_payment"].error)


def test_an_older_update_arriving_late_is_stale(
    webhook_event: EventFactory, deliver: Deliver
) -> None:
    newer = webhook_event("shop", "orders/updated", {"id": 7, "updated_at": "2026-05-01T10:05Z"})
    older = webhook_event("shop", "orders/updated", {"id": 7, "updated_at": "2026-05-01T10:00Z"})
    assert deliver(newer).status == "done"
    assert deliver(older).status == "stale"
    assert ORDERS[7]["updated_at"] == "2026-05-01T10:05Z"


def test_the_shop_domain_reaches_the_handler(webhook_event: EventFactory, deliver: Deliver) -> None:
    event = webhook_event(
        "shop",
        "orders/updated",
        {"id": 8, "updated_at": "2026-05-01T10:00Z"},
        headers={"X-Shopify-Shop-Domain": "other.myshopify.com"},
    )
    deliver(event)
    assert ORDERS[8]["shop"] == "other.myshopify.com"


def test_the_projects_own_app_serves_a_synced_order(
    webhook_event: EventFactory, deliver: Deliver
) -> None:
    deliver(webhook_event("shop", "orders/updated", {"id": 9, "updated_at": "2026-05-01T10:00Z"}))
    assert TestClient(app).get("/orders/9").json()["updated_at"] == "2026-05-01T10:00Z"


def test_the_receiver_queues_a_signed_delivery_once(
    receiver: ReceiverClient, signed_request: RequestSigner
) -> None:
    headers, body = signed_request(
        "stripe", {"id": "in_3", "amount_paid": 500}, type="invoice.paid", id="evt_3"
    )
    answer = receiver.post("/webhooks/stripe", content=body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "evt_3"}
    again = receiver.post("/webhooks/stripe", content=body, headers=headers)
    assert again.json() == {"status": "duplicate", "id": "evt_3"}
    assert [job.args[1] for job in receiver.jobs()] == ["evt_3"]  # (source, event id, ...)
    [outcome] = receiver.run_jobs()  # the real worker, in this process
    assert outcome.states == {"record_payment": "done", "audit": "done"}
    assert PAID["in_3"] == 500


def test_a_request_signed_with_another_secret_is_refused(
    receiver: ReceiverClient, signed_request: RequestSigner
) -> None:
    headers, body = signed_request("stripe", secret="whsec_not_the_endpoint_secret")
    assert receiver.post("/webhooks/stripe", content=body, headers=headers).status_code == 401
