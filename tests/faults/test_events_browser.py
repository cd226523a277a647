"""The Events page in a real headless Chromium, against the Procfile's real processes:
search, open an event, requeue a dead one, with a hostile id, type and payload shown as
text; a page on another origin cannot requeue; and a screenshot that shows the chart's bars
(the last hour's, the range that fits a fresh stack)."""

from __future__ import annotations

import html
from collections.abc import Callable
from urllib.parse import quote

import pytest
from redis import Redis
from rq.job import Job

from app.jobstate import JobMeta
from tests.e2e_handlers import HOSTILE_TYPE
from tests.faults.browser import (
    ANSWERED_JS,
    OtherOrigin,
    assert_nothing_ran,
    dead_letter,
    log_in,
    markup,
    page_text,
    start_site,
)
from tests.faults.png import colours
from tests.processes import Stack, send, wait_until
from workers.dev.redis_server import RedisServer
from workers.ops.events_page.chart import COLORS

HOSTILE_ID = markup("event-id")
NOTE = markup("payload")


def hex_colour(value: str) -> tuple[int, int, int]:
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def requeues(redis: Redis, job_id: str) -> int:
    return JobMeta.from_meta(Job.fetch(job_id, connection=redis).meta).requeues


def attacker_page(dashboard: str, event_id: str, source: str = "inbound") -> str:
    """A page on another origin that posts the Events page's actions with the login the
    browser holds: a form for all handlers, and a no-cors fetch for the failed ones; titled
    "fired" once both are answered."""
    action = f"{dashboard}/events/requeue"
    return f"""<!doctype html><html><body>
        <form id="f" method="post" action="{action}">
          <input type="hidden" name="source" value="{source}">
          <input type="hidden" name="id" value="{html.escape(event_id)}">
          <input type="hidden" name="handlers" value="all">
        </form>
        <script>{ANSWERED_JS}
          viaForm(document.getElementById("f"));
          viaFetch("{action}", new URLSearchParams({{source: "{source}", handlers: "failed",
            id: decodeURIComponent("{quote(event_id)}")}}));
          fired();
        </script></body></html>"""


@pytest.mark.timeout(180)
def test_the_events_page_in_a_browser_searches_opens_and_requeues_hostile_events_as_text(
    browser: object,
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    attacker: OtherOrigin,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    driver: WebDriver = browser  # type: ignore[assignment]
    driver.set_window_size(1400, 1100)
    site = start_site(make_stack, redis_server.url)
    web, dashboard = site.web, site.dashboard

    for n in range(3):
        assert send(web.url, f"evt_ok_{n}").status_code == 200
    dead = dead_letter(site, redis, HOSTILE_ID, HOSTILE_TYPE, note=NOTE)
    # The receiver adds its counts to the day every 5 s.
    wait_until(lambda: bool(redis.keys("webhook:timeline:inbound:*")), 30, "the day's counts")
    log_in(driver)

    def body() -> str:
        return page_text(driver)

    # rq-dashboard's navigation leads to the Events page.
    driver.get(dashboard.url + "/")
    wait_until(lambda: "Events" in body(), 20, "the navigation")
    driver.find_element(By.LINK_TEXT, "Events").click()
    wait_until(lambda: "Last hour, per minute" in body(), 20, "the Events page")
    assert_nothing_ran(driver, "/events")
    shown = body()
    assert "window.__xss='event-id'" in shown and HOSTILE_TYPE in shown

    # The picture is drawn: the chart's bars are in a screenshot of it.
    driver.save_screenshot(str(dashboard.log.parent / "events.png"))
    chart = driver.find_element(By.ID, "day").screenshot_as_png
    found = colours(chart)
    for series in ("accepted", "dead"):
        assert found[hex_colour(COLORS[series])] > 10, f"no {series} bars in the screenshot"
    assert len(driver.find_elements(By.CSS_SELECTOR, "#events tbody tr")) == 4

    # Search for the hostile id through the form.
    field = driver.find_element(By.NAME, "id")
    field.send_keys(HOSTILE_ID)
    field.submit()
    wait_until(lambda: "Found." in body(), 20, "the search")
    assert_nothing_ran(driver, "search")
    rows = driver.find_elements(By.CSS_SELECTOR, "#events tbody tr")
    assert len(rows) == 1 and HOSTILE_ID in rows[0].text

    # Open it: payload, error, type as text; the job's link.
    rows[0].find_element(By.CSS_SELECTOR, "td.id a").click()
    wait_until(lambda: "Payload" in body(), 20, "the event page")
    assert_nothing_ran(driver, "event")
    assert driver.find_element(By.ID, "event-id").text == HOSTILE_ID
    assert "window.__xss='payload'" in driver.find_element(By.ID, "payload").text
    assert "cannot parse" in body()
    # The handler's turn carries the hostile note in its error: text too.
    turns = driver.find_element(By.ID, "attempts").text
    assert "hostile_type" in turns and "window.__xss='payload'" in turns
    job_link = driver.find_element(By.ID, "job-link").get_attribute("href") or ""
    assert job_link.endswith(f"/0/view/job/{dead}")
    event_page = driver.current_url
    driver.save_screenshot(str(dashboard.log.parent / "event.png"))

    # Another origin's page posts the requeue with the browser's login: refused.
    attacker.html = attacker_page(dashboard.url, HOSTILE_ID)
    refused = dashboard.output().count("dashboard action refused")
    driver.get(attacker.url)
    wait_until(lambda: driver.title == "fired", 20, "the dashboard's answers to the attacker")
    # Still dead, and never requeued (a requeued one would soon be dead again: its handler
    # still fails).
    assert redis.zscore("rq:failed:webhooks", dead) is not None and requeues(redis, dead) == 0
    assert dashboard.output().count("dashboard action refused") == refused + 2

    # From the event's own page, the requeue works and is logged.
    driver.get(event_page)
    wait_until(lambda: "Payload" in body(), 20, "the event page again")
    driver.find_element(By.ID, "requeue").click()
    done = "Requeued with its full retry budget. Only its handlers that have not succeeded"
    wait_until(lambda: done in body(), 20, "the requeue")
    assert_nothing_ran(driver, "after the requeue")
    wait_until(lambda: '"action": "events.requeue"' in dashboard.output(), 10, "its log line")
    assert '"outcome": "requeued"' in dashboard.output()
    assert '"all_handlers": false' in dashboard.output()
    # Queued again, the page reloads itself until the event settles (dead again: its
    # handler still fails), whichever state it was in when it opened.
    wait_until(lambda: status_shown(driver) == "dead", 40, "the page reaching dead by itself")


def status_shown(driver: object) -> str:
    """The event page's status; "" while a reload replaces the page."""
    from selenium.common.exceptions import WebDriverException

    try:
        return str(driver.find_element("css selector", "#record .status").text)  # type: ignore[attr-defined]
    except WebDriverException:
        return ""


@pytest.mark.timeout(120)
def test_the_events_page_switches_autorefresh_on_and_reloads_itself_in_a_browser(
    browser: object, redis_server: RedisServer, make_stack: Callable[..., Stack]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    driver: WebDriver = browser  # type: ignore[assignment]
    dashboard = start_site(make_stack, redis_server.url).dashboard
    log_in(driver)
    driver.get(dashboard.url + "/events?source=inbound")
    wait_until(lambda: "Autorefresh" in page_text(driver), 20, "the Events page")
    driver.find_element(By.ID, "autorefresh-switch").click()
    wait_until(lambda: "refresh=on" in driver.current_url, 20, "the switch's link")
    assert "source=inbound" in driver.current_url
    # A mark on this page's window: gone once the meta refresh has loaded it anew.
    driver.execute_script("window.__mark = 1")
    wait_until(lambda: _unmarked(driver), 30, "the page's reload")
    assert_nothing_ran(driver, "after the reload")
    assert driver.find_element(By.ID, "autorefresh-switch").get_attribute("aria-checked") == "true"


def _unmarked(driver: object) -> bool:
    from selenium.common.exceptions import WebDriverException

    try:
        return driver.execute_script("return window.__mark") is None  # type: ignore[attr-defined]
    except WebDriverException:
        return False


def bulk_attacker_page(dashboard: str, fields: dict[str, str]) -> str:
    """A page on another origin that posts the bulk requeue with the browser's login, titled
    "fired" once it is answered."""
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in fields.items()
    )
    return f"""<!doctype html><html><body>
        <form id="f" method="post" action="{dashboard}/events/bulk/requeue">{inputs}</form>
        <script>{ANSWERED_JS}
          viaForm(document.getElementById("f"));
          fired();
        </script></body></html>"""


@pytest.mark.timeout(180)
def test_a_searchs_bulk_requeue_moves_exactly_its_dead_letters_and_not_from_another_origin(
    browser: object,
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    attacker: OtherOrigin,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    driver: WebDriver = browser  # type: ignore[assignment]
    site = start_site(make_stack, redis_server.url)
    dashboard = site.dashboard

    def flaky(event_id: str) -> str:
        redis.set(f"fail:{event_id}", 1)  # order.flaky fails while this is set
        return dead_letter(site, redis, event_id, "order.flaky")

    before = flaky("evt_before")  # received before the search's range
    matched = [flaky("evt_m1"), flaky("evt_m2")]
    other_type = dead_letter(site, redis, "evt_other", "order.hostile", note="x")
    since = repr(redis.zscore("webhook:events", "webhook:event:inbound:evt_m1"))
    search = {"type": "order.flaky", "since": since}
    log_in(driver)

    def body() -> str:
        return page_text(driver)

    def dead() -> set[str]:
        return {i.decode() for i in redis.zrange("rq:failed:webhooks", 0, -1)}

    # Another origin's page posts the bulk requeue of every dead letter: refused.
    everything = dead()
    refused = dashboard.output().count("dashboard action refused")
    jobs = " ".join(sorted(everything))
    attacker.html = bulk_attacker_page(dashboard.url, {**search, "jobs": jobs, "handlers": "all"})
    driver.get(attacker.url)
    wait_until(lambda: driver.title == "fired", 20, "the dashboard's answer to the attacker")
    assert dead() == everything and [requeues(redis, j) for j in everything] == [0] * 4
    assert dashboard.output().count("dashboard action refused") == refused + 1
    assert '"action": "events.bulk_requeue"' not in dashboard.output()

    # The search's own page: its buttons, the confirmation, then the requeue.
    for event_id in ("evt_before", "evt_m1", "evt_m2"):
        redis.delete(f"fail:{event_id}")  # each succeeds if it runs again
    driver.get(f"{dashboard.url}/events?type=order.flaky&since={quote(since)}")
    wait_until(lambda: "2 dead letters match this search" in body(), 20, "the search")
    driver.find_element(By.ID, "bulk-requeue").click()
    wait_until(lambda: "Nothing has changed yet." in body(), 20, "the confirmation")
    assert_nothing_ran(driver, "the confirmation")
    late = flaky("evt_m3")  # matches the search, failed after the confirmation
    driver.find_element(By.ID, "confirm").click()
    wait_until(lambda: "2 requeued." in body(), 20, "the bulk requeue")
    for event_id in ("evt_m1", "evt_m2"):
        key = f"webhook:event:inbound:{event_id}"
        wait_until(lambda k=key: redis.hget(k, "status") == b"done", 30, f"{event_id} done")
    assert dead() == {before, other_type, late}
    assert not dead() & set(matched)
    wait_until(lambda: '"action": "events.bulk_requeue"' in dashboard.output(), 10, "its log")
    assert '"requeued": 2' in dashboard.output() and '"skipped": 0' in dashboard.output()
