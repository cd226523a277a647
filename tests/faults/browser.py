"""Driving Debian's headless Chromium for the dashboard tests: the browser, the login every
request carries, hostile markup, and the checks that nothing of it ran."""

from __future__ import annotations

import base64
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from redis import Redis

from app.keys import job_id_for
from tests.conftest import AUTH
from tests.processes import Process, Stack, send, wait_http, wait_until

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
INJECTED = "img[onerror], svg[onload], [onmouseover], #job-data script, tbody script"


def markup(tag: str) -> str:
    """Markup in three contexts (element, attribute, script) that records `tag` if it runs."""
    return (
        f'"><img src=x onerror="window.__xss=\'{tag}\'">'
        f"<svg onload=\"window.__xss='{tag}'\"></svg>"
        f"</script><script>window.__xss='{tag}'</script>"
        f"' onmouseover='window.__xss=\"{tag}\"'"
    )


@dataclass(frozen=True, slots=True)
class Site:
    web: Process
    dashboard: Process
    worker: Process


def start_site(make_stack: Callable[..., Stack], redis_url: str) -> Site:
    """The Procfile's receiver, dashboard and worker, with no retries: an event whose
    handler fails is a dead letter at once."""
    stack = make_stack(redis_url, WEBHOOK_MAX_RETRIES="0")
    site = Site(stack.start("web"), stack.start("dashboard"), stack.start("worker"))
    wait_http(site.dashboard.url + "/", site.dashboard, auth=AUTH)
    return site


def dead_letter(site: Site, redis: Redis, event_id: str, event_type: str, **fields: str) -> str:
    """Send an event whose handler fails and wait for its dead letter; its job id."""
    assert send(site.web.url, event_id, event_type, **fields).status_code == 200
    job_id = job_id_for("inbound", event_id)
    wait_until(lambda: redis.zscore("rq:failed:webhooks", job_id) is not None, 30, "dead letter")
    return job_id


def page_text(driver: object) -> str:
    """The page's visible text; "" while a navigation replaces the page under our feet."""
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        return str(driver.find_element("tag name", "body").text)  # type: ignore[attr-defined]
    except StaleElementReferenceException:
        return ""


def chromium() -> Iterator[object]:
    if not (CHROMIUM and CHROMEDRIVER):
        reason = "chromium and chromedriver are needed: apt-get install chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def document_status(driver: object, url: str) -> int | None:
    """The HTTP status of the last page load of `url`, from Chrome's network log."""
    import json

    status = None
    for entry in driver.get_log("performance"):  # type: ignore[attr-defined]
        message = json.loads(entry["message"])["message"]
        response = message.get("params", {}).get("response", {})
        if message["method"] == "Network.responseReceived" and response.get("url") == url:
            status = int(response["status"])
    return status


def log_in(driver: object) -> None:
    """Sends the login with every request, to any origin: what a browser that cached the
    dashboard's Basic credentials does, and the strongest position for an attacker page."""
    token = base64.b64encode(":".join(AUTH).encode()).decode()
    driver.execute_cdp_cmd("Network.enable", {})  # type: ignore[attr-defined]
    driver.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}}
    )


# Resolves once every image of the page has loaded or failed, and then a probe image added
# after them has too: an injected `<img onerror>` has had its turn by then (its handler runs
# before the listeners added here), and so has any handler queued before the probe's.
_IMAGES_SETTLED = """
const done = arguments[arguments.length - 1];
const settled = image => new Promise(resolve => {
  image.addEventListener("load", resolve);
  image.addEventListener("error", resolve);
});
const pending = [...document.images].filter(image => !image.complete).map(settled);
Promise.all(pending).then(() => {
  const probe = new Image();
  settled(probe).then(() => setTimeout(done, 0));
  probe.src = "/nothing-ran-probe";
});
"""


def assert_nothing_ran(driver: object, page: str) -> None:
    driver.execute_async_script(_IMAGES_SETTLED)  # type: ignore[attr-defined]
    assert driver.execute_script("return window.__xss") is None, page  # type: ignore[attr-defined]
    injected = driver.execute_script(  # type: ignore[attr-defined]
        f"return document.querySelectorAll({INJECTED!r}).length"
    )
    assert injected == 0, page


# An attacker's page sends its requests through these; `fired()` titles it "fired" once the
# dashboard has answered every one (an image loaded or failed, a fetch resolved, a form's
# frame loaded, whatever the answer). A test that waits for that title then reads the
# dashboard's state knows each request was handled, refused or not, however late it came.
ANSWERED_JS = """
const answers = [];
function viaImage(url) {
  answers.push(new Promise(done => {
    const image = new Image();
    image.onload = image.onerror = done;
    image.src = url;
  }));
}
function viaFetch(url, body) {
  const post = {method: "POST", mode: "no-cors", credentials: "include", body: body};
  answers.push(fetch(url, post));
}
function viaForm(form) {
  const frame = document.createElement("iframe");
  frame.name = "answer-" + answers.length;
  document.body.append(frame);  // its first, empty document loads here, at once
  answers.push(new Promise(done => frame.onload = done));
  form.target = frame.name;
  form.submit();
}
function fired() {
  Promise.all(answers).then(() => document.title = "fired");
}
"""


@dataclass
class OtherOrigin:
    """A page on another origin than the dashboard's, as an attacker's site would be. The
    test writes its `html` once it knows what to aim at, then opens `url`."""

    url: str = ""
    html: str = ""


def other_origin() -> Iterator[OtherOrigin]:
    """Serves `OtherOrigin.html` at its url until the test ends; then stops the server and
    closes its socket."""
    site = OtherOrigin()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(site.html.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # "localhost", not 127.0.0.1: another origin for the browser even on the same machine.
    site.url = f"http://localhost:{server.server_address[1]}/"
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
