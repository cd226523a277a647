"""The dashboard in a real headless Chromium: hostile data on every page, and an attacker on
another origin. Every id, type, payload, error, metadata value, queue and worker name below
is markup that sets `window.__xss` if any page inserts it as HTML."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from redis import Redis
from rq import Queue, Worker
from rq.job import Job

from app.keys import job_id_for
from tests.e2e_handlers import HOSTILE_TYPE
from tests.faults.browser import (
    ANSWERED_JS,
    OtherOrigin,
    assert_nothing_ran,
    dead_letter,
    document_status,
    log_in,
    markup,
    page_text,
    start_site,
)
from tests.processes import Stack, send, wait_until
from workers.dev.redis_server import RedisServer

DEAD_ID, RUNNING_ID = markup("dead-id"), markup("running-id")
NOTE = markup("payload")
QUEUE = markup("queue").replace("/", "")  # RQ keys hold the name; keep it URL-safe enough
WORKER = markup("worker")


def plant_hostile_rq_data(redis: Redis) -> dict[str, str]:
    """Jobs in every registry of a queue with a hostile name, and a hostile worker."""
    queue = Queue(QUEUE, connection=redis)

    def job(tag: str, **options: object) -> Job:
        return queue.enqueue_call(
            "tests.e2e_handlers.count",
            args=(markup(f"{tag}-arg"),),
            description=markup(f"{tag}-description"),
            meta={"note": markup(f"{tag}-meta")},
            **options,
        )

    queued = job("queued")
    job("deferred", depends_on=queued)
    canceled = job("canceled")
    canceled.cancel()
    from datetime import timedelta

    queue.enqueue_in(
        timedelta(hours=1),
        "tests.e2e_handlers.count",
        markup("scheduled-arg"),
        description=markup("scheduled-description"),
    )
    Worker([queue], connection=redis, name=WORKER).register_birth()
    return {"queued": queued.id, "canceled": canceled.id}


def attacker_page(dashboard: str, job: str) -> str:
    """Another origin's page that fires every state-changing request it can at the dashboard,
    and is titled "fired" once the dashboard has answered them all."""
    d = dashboard
    return f"""<!doctype html><html><body>
        <form id="empty" method="post" action="{d}/queue/webhooks/failed/empty"></form>
        <form id="delete" method="post" action="{d}/job/{job}/delete"></form>
        <script>{ANSWERED_JS}
          viaImage("{d}/requeue/webhooks");
          viaImage("{d}/job/{job}/requeue");
          viaForm(document.getElementById("empty"));
          viaForm(document.getElementById("delete"));
          viaFetch("{d}/job/{job}/delete");
          viaFetch("{d}/requeue/webhooks");
          fired();
        </script></body></html>"""


@pytest.mark.timeout(240)
def test_every_dashboard_page_shows_hostile_data_as_text_and_ignores_other_origins(
    browser: object,
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    attacker: OtherOrigin,
) -> None:
    from selenium.webdriver.remote.webdriver import WebDriver

    driver: WebDriver = browser  # type: ignore[assignment]
    site = start_site(make_stack, redis_server.url)
    web, dashboard = site.web, site.dashboard

    # A dead letter: hostile id, type, payload and error message (the handler echoes it).
    dead = dead_letter(site, redis, DEAD_ID, HOSTILE_TYPE, note=NOTE)
    # A job running while the pages are open: the Workers page shows its call string.
    assert send(web.url, RUNNING_ID, "order.slow", seconds=120, note=NOTE).status_code == 200
    running = job_id_for("inbound", RUNNING_ID)
    wait_until(lambda: redis.get(f"starts:{RUNNING_ID}") == b"1", 30, "the slow job to start")
    planted = plant_hostile_rq_data(redis)

    # Without a login the browser gets a 401 (and its login prompt), not the dashboard.
    driver.get(dashboard.url + "/")
    assert document_status(driver, dashboard.url + "/") == 401
    assert "RQ" not in driver.page_source
    log_in(driver)

    q = quote(QUEUE, safe="")
    pages = [
        ("/", "onerror"),
        ("/0/view/queues", "onerror"),
        ("/0/view/workers", "onerror"),
        ("/0/view/jobs", "queued jobs"),
        ("/0/view/jobs/webhooks/failed/8/asc/1", "onerror"),
        ("/0/view/jobs/webhooks/started/8/asc/1", "onerror"),
        (f"/0/view/jobs/{q}/queued/8/asc/1", "onerror"),
        (f"/0/view/jobs/{q}/deferred/8/asc/1", "onerror"),
        (f"/0/view/jobs/{q}/scheduled/8/asc/1", "onerror"),
        (f"/0/view/jobs/{q}/canceled/8/asc/1", "onerror"),
        (f"/0/view/job/{dead}", "onerror"),
        (f"/0/view/job/{running}", "onerror"),
        (f"/0/view/job/{planted['queued']}", "onerror"),
        (f"/0/view/job/{planted['canceled']}", "onerror"),
    ]
    for page, marker in pages:
        driver.get(dashboard.url + page)
        wait_until(
            lambda m=marker: m in page_text(driver),
            20,
            f"{page} to render",
        )
        assert_nothing_ran(driver, page)
    # The hostile text is there, as text: the type, the payload note, the error message.
    driver.get(f"{dashboard.url}/0/view/job/{dead}")
    wait_until(lambda: "cannot parse" in page_text(driver), 20, "job")
    assert "window.__xss='payload'" in page_text(driver)
    # The metadata's handler lines, the last attempt's turn quoting the payload: text too.
    assert "hostile_type: failed (ValueError: cannot parse" in page_text(driver)
    driver.get(f"{dashboard.url}/0/view/workers")
    wait_until(lambda: "order.slow" in page_text(driver), 20, "call")
    shown = page_text(driver)
    assert "onerror" in shown and "running-id" in shown and "worker'" in shown
    driver.save_screenshot(str(dashboard.log.parent / "dashboard-workers.png"))

    # An attacker's page on another origin fires every action it can: nothing happens.
    attacker.html = attacker_page(dashboard.url, dead)
    driver.get(attacker.url)
    wait_until(lambda: driver.title == "fired", 20, "the dashboard's answers to the attacker")
    assert redis.zscore("rq:failed:webhooks", dead) is not None
    assert redis.exists(f"rq:job:{dead}") == 1
    assert "dashboard action refused" in dashboard.output()
    assert '"action": ' not in dashboard.output()

    # From the dashboard's own page, the same action works.
    driver.get(f"{dashboard.url}/0/view/jobs/webhooks/failed/8/asc/1")
    wait_until(lambda: "onerror" in page_text(driver), 20, "failed")
    # The list says what it holds (an edit of rq-dashboard's jobs.html).
    assert "Dead letters" in page_text(driver) and "retry budget is spent" in page_text(driver)
    driver.find_element("css selector", "[data-role=requeue-job-btn]").click()
    wait_until(lambda: redis.zscore("rq:failed:webhooks", dead) is None, 20, "the requeue")
    # Logged once the requeue is done (the dashboard makes it itself): after the job moved.
    wait_until(lambda: '"action": "requeue"' in dashboard.output(), 20, "the requeue's line")
    site.worker.stop()
