"""What the alert rules and the Grafana dashboard read is what the real processes serve: the
Procfile's web and worker processes run, an event goes through, and every metric, label and
label value named in deploy/prometheus/webhook-alerts.yml and deploy/grafana/ is in the
receiver's /metrics. A renamed metric fails here, not silently on a dashboard at 3 a.m."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from redis import Redis

from tests.processes import Stack, effects, send, wait_until
from tests.promql import served, unserved
from tests.test_alert_rules import rules
from tests.test_grafana_dashboard import expressions, variable_queries
from workers.dev.redis_server import RedisServer

pytestmark = pytest.mark.e2e


def scrape(url: str) -> str:
    response = httpx.get(f"{url}/metrics", timeout=10)
    assert response.status_code == 200
    return response.text


def test_every_series_the_rules_and_the_dashboard_read_is_served(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url)
    web, _ = stack.start("web"), stack.start("worker")
    assert send(web.url, "evt_served").status_code == 200
    wait_until(lambda: effects(redis, "evt_served") == 1, 30, "the event's handler")
    # The outcome by type is settled with the batch, the scheduler takes its lock at start.
    wait_until(
        lambda: (
            "webhooks_worker_type_outcomes_total{" in scrape(web.url)
            and "webhooks_scheduler_up 1.0" in scrape(web.url)
        ),
        30,
        "the worker's outcome and its scheduler on /metrics",
    )
    series = served(scrape(web.url))
    # `shard`: on a cluster only (tests/cluster/test_cluster_stack.py checks it there).
    shard = frozenset({"shard"})
    missing = {
        **{f"rule {r['alert']}": unserved(r["expr"], series, shard) for r in rules()},
        **{f"panel query {e}": unserved(e, series, shard) for e in expressions()},
    }
    for metric, label in variable_queries():
        missing[f"variable label_values({metric}, {label})"] = (
            [] if label in series.get(metric, {}) else [f"{metric}{{{label}}}"]
        )
    assert {where: what for where, what in missing.items() if what} == {}


def test_the_worker_and_its_scheduler_are_counted_while_they_run(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url)
    web, worker = stack.start("web"), stack.start("worker")

    def figures() -> tuple[str, str]:
        text = scrape(web.url)
        lines = text.splitlines()
        return (
            next(line for line in lines if line.startswith("webhooks_workers ")),
            next(line for line in lines if line.startswith("webhooks_scheduler_up ")),
        )

    wait_until(
        lambda: figures() == ("webhooks_workers 1.0", "webhooks_scheduler_up 1.0"),
        30,
        "the worker and its scheduler",
    )
    # A warm stop: it unregisters, its scheduler lets go of the lock.
    assert worker.stop() == 0, worker.log.read_text()
    assert figures() == ("webhooks_workers 0.0", "webhooks_scheduler_up 0.0")
