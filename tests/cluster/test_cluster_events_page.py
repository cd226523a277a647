"""The Events page of every shard, on the cluster dashboard's front (`front_events.py`): the
queue now and the chart summed over three shards on three primaries (what was received,
once, and what every shard's workers did), and the bulk requeue and purge of the dead
letters a search matches in every shard, confirmed first, refused from another origin, each
done by its shard's own action; in headless Chromium too. A stopped primary's shard is
named and the others counted."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import httpx
from redis import Redis

from app.jobstate import EventStatus
from app.keys import job_id_for
from tests.cluster.harness import ShardedRedis
from tests.cluster.test_cluster_dashboard import SHARDS, dead_letter_per_shard, get, site
from tests.cluster.test_cluster_stack import send_one
from tests.conftest import AUTH
from tests.faults.browser import log_in, page_text
from tests.processes import Stack, effects, wait_until
from workers.dev.redis_server import RedisServer

# A bulk POST may start the shards' dashboard processes (each within the front's 30 s).
START = 90.0


def totals(page: str) -> dict[str, int]:
    """The chart's legend of the one source: each series' total in the range shown."""
    found = re.findall(
        r'<tr class="series-(\w+)"><th>.*?</th><td\s+class="total">(\d+)</td>', page, re.S
    )
    return {name: int(total) for name, total in found}


def form_of(page: str) -> tuple[str, dict[str, str]]:
    """The confirmation's form: where it posts, and its hidden fields."""
    action = re.search(r'<form method="post" action="([^"]+)">', page)
    assert action is not None, page
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    return action.group(1), {name: html.unescape(value) for name, value in fields}


def test_the_fronts_chart_counts_what_every_shard_received_and_worked(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    web, dashboard = site(make_stack, cluster, redis_server)
    dead = dead_letter_per_shard(web, redis, "evt_chart_dead", cluster)
    assert len(dead) == 3
    done = [f"evt_chart{n}" for n in range(12)]
    for event_id in done:
        assert send_one(web.url, event_id, "order.created") == 200
    assert {SHARDS.of("inbound", e) for e in done} == {0, 1, 2}
    wait_until(lambda: all(effects(redis, e) == 1 for e in done), 30, "the handlers")
    expected = {"accepted": 15, "done": 12, "dead": 3}

    def counted(path: str = "/events?range=hour") -> dict[str, int]:
        return totals(get(dashboard, path).text)

    # The receivers flush every few seconds; each shard's workers' counts are its own.
    wait_until(lambda: {k: counted().get(k) for k in expected} == expected, 30, "the chart")
    assert counted()["retried"] == 0 and counted()["rejected"] == 0
    # The range that fits, chosen from every shard's counts summed: the hour holds them all.
    opened = get(dashboard, "/events").text
    assert "auto (hour)" in opened and totals(opened) == counted()
    page = get(dashboard, "/events?range=hour").text
    assert "<b>3</b> dead letters" in page and "<b>0</b> queued" in page
    assert '<svg class="chart"' in page
    # Each shard's own page says what its chart counts.
    assert "what every receiver" in get(dashboard, "/shards/0/events").text
    own = get(dashboard, "/shards/1/events").text
    assert "This is shard 1's page" in own and "what every receiver" not in own
    # The legend's colours: the stylesheet the page links, served by the front.
    style = get(dashboard, "/style.css")
    assert style.status_code == 200 and ".swatch-dead" in style.text


def test_a_bulk_requeue_and_purge_on_the_front_act_on_every_shards_dead_letters(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    web, dashboard = site(make_stack, cluster, redis_server)
    dead = dead_letter_per_shard(web, redis, "evt_bulk", cluster)
    search = get(dashboard, "/events", params={"status": "dead"}).text
    assert "3 dead letters in 3 shards match this search" in search

    confirmation = get(dashboard, "/events/bulk", params={"verb": "requeue", "status": "dead"})
    assert confirmation.status_code == 200
    assert "3 dead letters to requeue" in confirmation.text
    action, fields = form_of(confirmation.text)
    assert action == "/events/bulk/requeue"
    for shard, event_id in dead.items():
        assert fields[f"jobs-{shard}"] == job_id_for("inbound", event_id)
    assert all(effects(redis, e) == 1 for e in dead.values())  # nothing done yet

    # From another origin, with the login a browser would attach: refused, nothing done.
    forged = httpx.post(
        dashboard.url + action,
        data={**fields, "handlers": "failed"},
        auth=AUTH,
        headers={"Origin": "https://attacker.example"},
    )
    assert forged.status_code == 403
    for headers in ({}, {"Origin": "null"}):  # no origin said, or a sandboxed page's
        unsaid = httpx.post(dashboard.url + action, data=fields, auth=AUTH, headers=headers)
        assert unsaid.status_code == 403
    assert get(dashboard, action).status_code == 405  # a link cannot act
    # Another shard's job listed as shard 0's, and a shard that does not exist: not acted on.
    crossed = {"status": "dead", "jobs-0": fields["jobs-1"], "jobs-99": fields["jobs-2"]}
    misled = httpx.post(
        dashboard.url + action,
        data=crossed,
        auth=AUTH,
        headers={"Origin": dashboard.url},
        timeout=START,
    )
    assert misled.status_code == 303 and "done=0&gone=1" in misled.headers["location"]
    assert all(effects(redis, e) == 1 for e in dead.values())
    # Still failing: each runs once more in its shard, and is a dead letter again.
    done = httpx.post(
        dashboard.url + action,
        data={**fields, "handlers": "failed"},
        auth=AUTH,
        headers={"Origin": dashboard.url},
        timeout=START,
    )
    assert done.status_code == 303, done.text
    assert "done=3" in done.headers["location"]
    wait_until(lambda: all(effects(redis, e) == 2 for e in dead.values()), 30, "the requeues")
    result = get(dashboard, done.headers["location"]).text
    assert "3 requeued." in result
    links = re.findall(r'<a href="(/shards/(\d)/events\?requeued=[^"]+)">', result)
    assert {shard for _, shard in links} == {"0", "1", "2"}
    for link, shard in links:
        assert dead[int(shard)] in get(dashboard, html.unescape(link)).text

    def still_dead() -> int:
        page = get(dashboard, "/events", params={"status": "dead"}).text
        found = re.search(r"(\d+) dead letters? in", page)
        return int(found.group(1)) if found else 0

    wait_until(lambda: still_dead() == 3, 30, "dead letters again")
    purge = get(dashboard, "/events/bulk", params={"verb": "purge", "status": "dead"})
    action, fields = form_of(purge.text)
    purged = httpx.post(
        dashboard.url + action,
        data=fields,
        auth=AUTH,
        headers={"Origin": dashboard.url},
        timeout=START,
    )
    assert purged.status_code == 303
    assert "3 purged." in get(dashboard, purged.headers["location"]).text
    assert still_dead() == 0
    for shard in SHARDS:
        failed = get(dashboard, f"/shards/{shard}/0/data/jobs/webhooks/failed/50/asc/1.json")
        assert failed.json()["jobs"] == []


def test_the_fronts_bulk_pages_show_a_hand_written_searchs_markup_as_text(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
) -> None:
    cluster = make_sharded_redis()
    _, dashboard = site(make_stack, cluster, redis_server)
    hostile = '"><img src=x onerror=alert(1)>'
    # A link someone else wrote, opened by an operator: its fields are shown, never run.
    for path in ("/events", "/events/bulk"):
        shown = get(dashboard, path, params={"verb": "purge", "type": hostile, "id": hostile})
        assert shown.status_code == 200, shown.text
        assert "<img src=x" not in shown.text and "&lt;img src=x" in shown.text
    # A result banner written by hand: its counts are numbers, its links tokens, or nothing.
    for banner in (
        {"bulk": "requeue", "done": "<b>9</b>"},
        {"bulk": "requeue", "done": "1", "unreached": "²", "unsure": "<i>1</i>", "batch-1": "x<y"},
    ):
        forged = get(dashboard, "/events", params=banner)
        assert forged.status_code == 200
        assert "<b>9</b>" not in forged.text and "<i>1</i>" not in forged.text
        assert "x<y" not in forged.text and 'id="bulk-unsure"' not in forged.text
    assert get(dashboard, "/events/bulk", params={"verb": "<script>"}).status_code == 404


def test_a_stopped_primarys_shard_is_named_on_the_fronts_events_page(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis(options={"cluster-require-full-coverage": "no"})
    web, dashboard = site(make_stack, cluster, redis_server)
    dead = dead_letter_per_shard(web, redis, "evt_down", cluster)
    for event_id in dead.values():
        redis.delete(f"fail:{event_id}")
    before = get(dashboard, "/events/bulk", params={"verb": "requeue", "status": "dead"})
    action, fields = form_of(before.text)
    stopped = cluster.primary_for_slot(SHARDS.slot(2))
    cluster.stop_with_replicas(stopped)

    page = get(dashboard, "/events", params={"status": "dead"})
    assert page.status_code == 200
    assert re.search(
        r"Not counted \(did not answer\):</p><ul id='picture-down'><li>shard 2: ", page.text
    )
    assert "<b>2</b> dead letters" in page.text
    shown = set(re.findall(r'<a href="/shards/\d/events/event\?[^"]*">([^<]+)</a>', page.text))
    assert shown == {dead[0], dead[1]}
    assert "2 dead letters in 2 shards match" in page.text
    confirmation = get(dashboard, "/events/bulk", params={"verb": "requeue", "status": "dead"})
    assert "<li>shard 2: " in confirmation.text and "2 dead letters to requeue" in confirmation.text
    # The form confirmed before the primary stopped: the others act, shard 2 is named.
    acted = httpx.post(
        dashboard.url + action,
        data=fields,
        auth=AUTH,
        headers={"Origin": dashboard.url},
        timeout=START,
    )
    assert acted.status_code == 303
    result = get(dashboard, acted.headers["location"]).text
    assert "2 requeued." in result and re.search(r'class="error">Shard 2: ', result)
    wait_until(lambda: effects(redis, dead[0]) == effects(redis, dead[1]) == 2, 30, "requeues")


def test_in_a_browser_the_fronts_events_page_charts_and_requeues_every_shards_dead_letters(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
    browser: Any,
) -> None:
    from selenium.webdriver.common.by import By  # as tests/faults/ do: with the browser

    cluster = make_sharded_redis()
    web, dashboard = site(make_stack, cluster, redis_server)
    dead = dead_letter_per_shard(web, redis, "evt_click", cluster)
    for event_id in dead.values():
        redis.delete(f"fail:{event_id}")
    log_in(browser)
    browser.get(dashboard.url + "/events?status=dead&range=hour")
    wait_until(lambda: "3 dead letters in 3 shards" in page_text(browser), 20, "the buttons")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    browser.find_element(By.ID, "bulk-requeue").click()
    wait_until(lambda: "3 dead letters to requeue" in page_text(browser), 20, "the confirmation")
    browser.find_element(By.ID, "confirm").click()
    wait_until(lambda: "3 requeued." in page_text(browser), 20, "the result")
    wait_until(lambda: all(effects(redis, e) == 2 for e in dead.values()), 30, "the requeues")
    assert all(effects(redis, e) == 2 for e in dead.values())


def test_a_shards_walk_stopped_on_its_budget_holds_back_older_rows_of_the_others(
    make_sharded_redis: Callable[..., ShardedRedis],
) -> None:
    """Shard 0's newest records are 2,000 settled events, more than its share of the page's
    budget, and then a dead letter; shard 1's dead letter is older. The first page must not
    show shard 1's before shard 0 has looked below where it stopped: newest first, always."""
    from app.settings import Settings
    from workers.ops.events_page.search import SCAN_BUDGET, Query
    from workers.ops.front_search import search

    cluster = make_sharded_redis()
    settings = Settings.load(
        _env_file=None,
        redis_cluster_nodes=cluster.seeds,
        webhook_shards=str(SHARDS.count),
        webhook_signing_secret="s" * 32,
    )
    now = 1_800_000_000.0
    busy = SCAN_BUDGET // SHARDS.count + 1000  # past the chunk its budget ends in

    def record(shard: int, event_id: str, status: str, at: float) -> None:
        keys = settings.keys.sharded(SHARDS.tag(shard))
        client = cluster.primary_for_slot(SHARDS.slot(shard)).redis()
        key = keys.event("inbound", event_id)
        client.hset(key, mapping={"source": "inbound", "id": event_id, "type": "order.created"})
        client.hset(key, mapping={"status": status, "attempts": 1, "received_at": at})
        client.zadd(keys.events, {key: at})

    for n in range(busy):
        record(0, f"evt_busy{n}", "done", now - n)
    record(0, "evt_dead_newer", "dead", now - busy - 10)
    record(1, "evt_dead_older", "dead", now - busy - 20)

    shown: list[str] = []
    at: dict[int, Any] = {}
    pages = 0
    while True:
        merged = search(settings, SHARDS, Query(status=EventStatus.DEAD), at)
        shown += [found.record.id for found in merged.rows]
        pages += 1
        if merged.next_at is None:
            break
        at = merged.next_at
    assert shown == ["evt_dead_newer", "evt_dead_older"]
    assert pages >= 2  # the first page was bounded: shard 0 stopped on its budget
