"""The dashboard launcher: a login always, compared in constant time, and no stored XSS."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from redis import Redis

from app.keys import job_id_for
from app.settings import ConfigError, Settings
from tests.conftest import Harness
from workers import Event, handler
from workers.dashboard import create_dashboard

AUTH = ("ops", "dashboard-password")


@pytest.mark.parametrize("missing", ["rq_dashboard_username", "rq_dashboard_password"])
def test_the_dashboard_refuses_to_start_without_credentials(
    make_settings: Callable[..., Settings], missing: str
) -> None:
    with pytest.raises(ConfigError, match="RQ_DASHBOARD_USERNAME and RQ_DASHBOARD_PASSWORD"):
        create_dashboard(make_settings(**{missing: None}))


@pytest.mark.parametrize(
    "auth", [None, ("ops", "wrong"), ("other", "dashboard-password"), ("", "")]
)
def test_every_page_needs_the_login(
    make_settings: Callable[..., Settings], redis: Redis, auth: tuple[str, str] | None
) -> None:
    client = create_dashboard(make_settings()).test_client()
    for path in ("/", "/0/data/queues.json", "/requeue/webhooks"):
        response = client.get(path, auth=auth)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_the_login_opens_the_dashboard(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    client = create_dashboard(make_settings()).test_client()
    assert client.get("/", auth=AUTH).status_code == 200


def test_a_hostile_dead_letter_is_escaped_in_the_job_json(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness()
    script = "<script>alert(1)</script>"

    @handler("inbound", "*")
    def echo(event: Event) -> None:
        raise ValueError(event.payload["note"])

    harness.event('x"><img src=x onerror=alert(1)>', script, note=script)
    harness.drain()
    job_id = job_id_for("inbound", 'x"><img src=x onerror=alert(1)>')
    dashboard = create_dashboard(harness.settings).test_client()
    response = dashboard.get(f"/0/data/job/{job_id}.json", auth=AUTH)
    text = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "<script>" not in text and "<img" not in text
    data = json.loads(text)
    assert "&lt;script&gt;" in data["exc_info"] and "&lt;script&gt;" in data["metadata"]
