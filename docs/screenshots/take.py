"""Takes the docs' screenshots of the Events page from a real stack, so they cannot go stale.

    .venv/bin/python docs/screenshots/take.py [OUT_DIR]      (make screenshots)

Starts a throwaway redis-server and the Procfile's web, worker and dashboard with the example
handlers (`examples/handlers.py`), sends events with `webhooks send` as a user would (orders
that succeed, one whose handler keeps failing, one it refuses for good, a duplicate, a forged
signature), waits for their outcomes, and photographs in Debian's headless Chromium:
- `events-list.png`: the search results, newest first;
- `events-chart-fresh.png`: the chart of that fresh stack;
- `events-chart-day.png`: the chart over a day of synthetic traffic (counters written into
  the timeline as the receivers would have over 24 hours);
- `event-detail.png`: the dead letter's page.
Then writes `SOURCE`: a digest of the page's code (`workers/ops/events_page/`), which
`tests/faults/test_screenshots.py` compares with the code's current digest: change the page,
and the test fails until the screenshots are taken again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from redis import Redis  # noqa: E402

from tests.conftest import AUTH as LOGIN  # noqa: E402
from tests.faults.browser import CHROMEDRIVER, CHROMIUM, log_in  # noqa: E402
from tests.processes import Stack, wait_http, wait_until  # noqa: E402
from workers.dev.redis_server import RedisServer  # noqa: E402

HERE = Path(__file__).resolve().parent
PAGE_CODE = ROOT / "workers" / "ops" / "events_page"
SHOTS = ("events-list.png", "events-chart-fresh.png", "events-chart-day.png", "event-detail.png")
SECRET = "screenshot-secret-of-inbound"
WIDTH = 1280


def page_digest() -> str:
    """The digest of the page's code: every module of the Events page, by name and text."""
    digest = hashlib.sha256()
    for path in sorted(PAGE_CODE.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@contextmanager
def stack(workdir: Path) -> Iterator[tuple[Stack, Redis, str, str]]:
    """A Redis and the Procfile's three processes; yields the receiver's and dashboard's URLs."""
    server = RedisServer(workdir / "redis").start()
    processes = Stack(
        {
            "REDIS_URL": server.url,
            "HOST": "127.0.0.1",
            "WEBHOOK_SIGNING_SECRET": SECRET,
            "WEBHOOK_HANDLERS": "examples.handlers",
            "WEBHOOK_RETRY_INTERVALS": "1,2",
            "RQ_DASHBOARD_USERNAME": LOGIN[0],
            "RQ_DASHBOARD_PASSWORD": LOGIN[1],
        },
        workdir,
    )
    try:
        web = processes.start("web")
        processes.start("worker")
        dashboard = processes.start("dashboard")
        wait_http(dashboard.url + "/", dashboard, auth=LOGIN)
        yield processes, Redis.from_url(server.url), web.url, dashboard.url
    finally:
        processes.stop_all()
        server.stop()


def send(web: str, event_type: str, event_id: str, secret: str = SECRET) -> None:
    """`webhooks send`, as a user tries the stack; a forged one is expected to be refused."""
    env = {**os.environ, "WEBHOOK_SIGNING_SECRET": SECRET, "REDIS_URL": "redis://unused"}
    command = [str(Path(sys.executable).parent / "webhooks"), "send", "inbound", event_type]
    command += ["--id", event_id, "--url", web, "--secret", secret]
    subprocess.run(command, env=env, cwd=ROOT, capture_output=True, check=False)


def traffic(web: str, redis: Redis) -> None:
    """A few minutes of a new user's first hour, and their outcomes."""
    for n in range(1, 7):
        send(web, "order.created", f"evt_order_{n:03}")
    send(web, "order.created", "evt_order_003")  # a provider's retry: a duplicate
    send(web, "demo.flaky", "evt_flaky_001")
    send(web, "demo.invalid", "evt_invalid_001")
    send(web, "order.created", "evt_forged_001", secret="not-the-secret-of-inbound")
    wait_until(lambda: redis.zcard("rq:failed:webhooks") == 2, 60, "the two dead letters")
    # The receiver adds its counts to the timeline every 5 s: wait for the duplicate's.
    wait_until(lambda: _counted(redis, "duplicate") and _counted(redis, "dead"), 30, "the counts")


def _counted(redis: Redis, field: str) -> bool:
    return any(redis.hget(key, field) for key in redis.scan_iter("webhook:timeline:inbound:*"))


def synthetic_day(redis: Redis, now: float) -> None:
    """A day of traffic, as the receivers and the workers' sampling would have counted it."""
    from app.timeline import INTERVAL, KEEP, interval_of, timeline_key

    start = interval_of(now) - 24 * 3600
    for n, interval in enumerate(range(start, interval_of(now), INTERVAL)):
        hour = (interval // 3600) % 24
        accepted = 40 + int(30 * abs(12 - hour) / 12) + (n * 7) % 11
        counts = {"accepted": accepted, "duplicate": accepted // 15, "done": accepted - 1}
        if 9 <= hour <= 10:  # an outage of the handler's downstream API
            counts.update(done=accepted // 3, retried=accepted // 2, dead=accepted // 4)
            counts.update(rejected=3)
        key = timeline_key("webhook", "inbound", interval)
        redis.hset(key, mapping=counts)
        redis.expire(key, KEEP)


def take(out: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    workdir = Path(tempfile.mkdtemp(prefix="screenshots-"))
    try:
        with stack(workdir) as (_, redis, web, dashboard):
            traffic(web, redis)
            log_in(driver)
            driver.set_window_size(WIDTH, 1000)
            driver.get(dashboard + "/events")
            wait_until(lambda: bool(driver.find_elements(By.ID, "events")), 20, "the list")
            (out / "events-chart-fresh.png").write_bytes(
                driver.find_element(By.ID, "day").screenshot_as_png
            )
            (out / "events-list.png").write_bytes(
                driver.find_element(By.ID, "search").screenshot_as_png
            )
            driver.get(dashboard + "/events/event?source=inbound&id=evt_flaky_001")
            wait_until(lambda: bool(driver.find_elements(By.ID, "payload")), 20, "the event")
            height = driver.execute_script("return document.body.scrollHeight")
            driver.set_window_size(WIDTH, min(int(height) + 120, 2400))
            driver.save_screenshot(str(out / "event-detail.png"))
            synthetic_day(redis, time.time())
            driver.set_window_size(WIDTH, 1000)
            driver.get(dashboard + "/events?range=day")
            wait_until(lambda: bool(driver.find_elements(By.ID, "day")), 20, "the day")
            (out / "events-chart-day.png").write_bytes(
                driver.find_element(By.ID, "day").screenshot_as_png
            )
    finally:
        driver.quit()
        shutil.rmtree(workdir, ignore_errors=True)
    (out / "SOURCE").write_text(page_digest() + "\n")


def main() -> None:
    if not (CHROMIUM and CHROMEDRIVER):
        sys.exit("chromium and chromedriver are needed: apt-get install chromium chromium-driver")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    out.mkdir(parents=True, exist_ok=True)
    take(out)
    print(f"screenshots in {out}: {', '.join(SHOTS)}")


if __name__ == "__main__":
    main()
