"""An Adyen batch's items are queued re-serialised, one notification each: whatever text
JSON can carry in an unsigned field of a signed item must survive that, not be a 500."""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.main import create_app
from app.settings import Settings
from tests.providers import signing as s
from tests.providers.cases import BY_NAME


def test_a_batch_whose_unsigned_field_holds_a_lone_surrogate_is_queued_not_a_500(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    key = s.hex_key("k")
    items = [s.adyen_item(key, "psp-1"), s.adyen_item(key, "psp-2")]
    # `reason` is not among the eight signed fields; "\ud800" is valid JSON text.
    items[0]["NotificationRequestItem"]["reason"] = "\ud800"
    body = json.dumps({"live": "false", "notificationItems": items}).encode()
    assert b"\\ud800" in body
    app = create_app(make_settings(**BY_NAME["adyen"].config(key)))
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.post("/webhooks/adyen", content=body)
    assert (answer.status_code, answer.text) == (200, "[accepted]")
    queued = {j.meta["event_id"]: j for j in Queue("webhooks", connection=redis).get_jobs()}
    alone = json.loads(queued["psp-1:AUTHORISATION:true"].args[3])
    assert alone["notificationItems"][0]["NotificationRequestItem"]["reason"] == "\ud800"
