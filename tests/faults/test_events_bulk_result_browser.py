"""A bulk requeue's result in a real headless Chromium, against the Procfile's processes:
in view at the top of the page it lands on, in a window of a laptop's size, without
scrolling; and its link lists exactly the events it requeued, a hostile id among them shown
as text."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis import Redis

from tests.faults.browser import (
    assert_nothing_ran,
    dead_letter,
    log_in,
    markup,
    page_text,
    start_site,
)
from tests.processes import Stack, wait_until
from workers.dev.redis_server import RedisServer

HOSTILE_ID = markup("requeued-id")
# The viewport of a 1280x800 laptop screen's browser window, its toolbars taken off.
WIDTH, HEIGHT = 1280, 800


def in_view(driver: object, element_id: str, unscrolled: bool = True) -> bool:
    """The element's whole box is inside the viewport (and the page is not scrolled)."""
    return bool(
        driver.execute_script(  # type: ignore[attr-defined]
            """const box = document.getElementById(arguments[0]).getBoundingClientRect();
            return (window.scrollY === 0 || !arguments[1]) && box.height > 0 &&
                box.top >= 0 && box.bottom <= window.innerHeight &&
                box.right <= window.innerWidth;""",
            element_id,
            unscrolled,
        )
    )


@pytest.mark.timeout(180)
def test_a_bulk_requeues_result_is_in_view_and_links_to_exactly_the_requeued_events(
    browser: object, redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    driver: WebDriver = browser  # type: ignore[assignment]
    driver.set_window_size(WIDTH, HEIGHT)
    site = start_site(make_stack, redis_server.url)
    dashboard = site.dashboard

    def flaky(event_id: str) -> str:
        redis.set(f"fail:{event_id}", 1)  # order.flaky fails while this is set
        return dead_letter(site, redis, event_id, "order.flaky")

    ids = [f"evt_{n}" for n in range(4)]
    requeued = {flaky(event_id) for event_id in [*ids, HOSTILE_ID]}
    other = dead_letter(site, redis, "evt_other", "order.hostile", note="x")
    log_in(driver)

    def body() -> str:
        return page_text(driver)

    driver.get(f"{dashboard.url}/events?type=order.flaky&status=dead")
    wait_until(lambda: "5 dead letters match this search" in body(), 20, "the search")
    driver.find_element(By.ID, "bulk-requeue").click()
    wait_until(lambda: "Nothing has changed yet." in body(), 20, "the confirmation")
    redis.delete(*(f"fail:{event_id}" for event_id in [*ids, HOSTILE_ID]))  # each succeeds now
    driver.find_element(By.ID, "confirm").click()
    wait_until(lambda: "5 requeued." in body(), 20, "the bulk requeue")
    assert_nothing_ran(driver, "the result")
    driver.save_screenshot(str(dashboard.log.parent / "bulk-result.png"))
    # Where the operator's eyes are: no scrolling to find out what happened.
    assert in_view(driver, "bulk-done")
    # The search it came from: none of them is a dead letter now (queued, running or done).
    assert "0 events shown." in body()

    link = driver.find_element(By.ID, "bulk-requeued")
    assert in_view(driver, "bulk-requeued")
    assert " ".join(link.text.split()) == "Show the 5 requeued events →"
    link.click()
    wait_until(lambda: "Only the 5 events" in body(), 20, "the requeued events")
    # The link leads to the search's results, below the picture: they are in view.
    assert in_view(driver, "requeued-only", unscrolled=False)
    assert driver.execute_script(
        "return document.getElementById('events').getBoundingClientRect().top"
    ) < driver.execute_script("return window.innerHeight")
    assert_nothing_ran(driver, "the requeued events")
    driver.save_screenshot(str(dashboard.log.parent / "requeued-events.png"))
    shown = {
        a.get_attribute("title")
        for a in driver.find_elements(By.CSS_SELECTOR, "#events tbody td.id a")
    }
    assert shown == {*ids, HOSTILE_ID}
    assert redis.zscore("rq:failed:webhooks", other) is not None
    assert not {i.decode() for i in redis.zrange("rq:failed:webhooks", 0, -1)} & requeued
