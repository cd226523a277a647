"""The Procfile's dashboard on a Redis Cluster: one address, a page listing every shard
(its primary, whether it answers), and each shard's own rq-dashboard and Events page behind
the same login, started by the front when first asked for. Dead letters of three shards on
three primaries are shown and requeued each on its shard's pages, and in headless Chromium
found by the search of every shard, opened and requeued with a click; a requeue from another
origin is refused there; a stopped primary's shards are said down while the others serve;
the search of every shard pages through each event once, newest first."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import httpx
from redis import Redis

from app.keys import Keys, job_id_for
from app.shards import Shards
from tests.cluster.harness import ShardedRedis
from tests.cluster.test_cluster_stack import send_one
from tests.conftest import AUTH
from tests.faults.browser import log_in, page_text
from tests.processes import Process, Stack, effects, wait_http, wait_until
from workers.dev.redis_server import RedisServer

SHARDS = Shards(3)
KEYS = Keys("webhook", "webhooks")


def site(
    make_stack: Callable[..., Stack], cluster: ShardedRedis, effects_at: RedisServer
) -> tuple[Process, Process]:
    stack = make_stack(
        effects_at.url,
        REDIS_CLUSTER_NODES=cluster.seeds,
        WEBHOOK_SHARDS=str(SHARDS.count),
        EFFECTS_REDIS_URL=effects_at.url,
        WEBHOOK_MAX_RETRIES="0",
    )
    web, dashboard = stack.start("web"), stack.start("dashboard")
    stack.start("worker")
    wait_http(dashboard.url + "/", dashboard, auth=AUTH)
    return web, dashboard


def dead_letter_per_shard(
    web: Process, redis: Redis, prefix: str, cluster: ShardedRedis
) -> dict[int, str]:
    """An event of each shard whose handler fails (no retries: a dead letter at once), once
    each is in its shard's dead letters (the handler's run comes before its settlement)."""
    candidates = [f"{prefix}{n}" for n in range(200)]
    dead = {s: next(c for c in candidates if SHARDS.of("inbound", c) == s) for s in SHARDS}
    for event_id in dead.values():
        redis.set(f"fail:{event_id}", 1)
        assert send_one(web.url, event_id, "order.flaky") == 200
    client = cluster.client()
    try:

        def all_dead() -> bool:
            return all(
                client.zscore(KEYS.sharded(SHARDS.tag(s)).failed, job_id_for("inbound", e))
                is not None
                for s, e in dead.items()
            )

        wait_until(all_dead, 30, "every shard's dead letter")
    finally:
        client.close()
    assert all(effects(redis, e) == 1 for e in dead.values())
    return dead


def get(dashboard: Process, path: str, **options: Any) -> httpx.Response:
    return httpx.get(dashboard.url + path, auth=AUTH, timeout=30, **options)


def test_each_shards_dead_letter_is_shown_and_requeued_on_its_shards_pages(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
) -> None:
    cluster = make_sharded_redis()
    web, dashboard = site(make_stack, cluster, redis_server)
    dead = dead_letter_per_shard(web, redis, "evt_dash", cluster)

    listing = get(dashboard, "/")
    assert listing.status_code == 200
    primaries = {str(n.port) for n in cluster.primaries()}
    assert listing.text.count("answers") == SHARDS.count
    assert all(port in listing.text for port in primaries)
    assert httpx.get(dashboard.url + "/", timeout=10).status_code == 401

    for shard, event_id in dead.items():
        # Its shard's rq-dashboard lists its dead letter, and no other shard's.
        failed = get(dashboard, f"/shards/{shard}/0/data/jobs/webhooks/failed/50/asc/1.json")
        assert failed.status_code == 200, failed.text
        ids = {job["id"] for job in failed.json()["jobs"]}
        assert ids == {job_id_for("inbound", event_id)}
        events = get(dashboard, f"/shards/{shard}/events", params={"status": "dead"})
        assert event_id in events.text
        assert all(other not in events.text for other in dead.values() if other != event_id)

    # An id found in whichever shard holds it: its event page there.
    found = get(dashboard, "/events/find", params={"id": dead[2]})
    assert found.status_code == 303
    assert found.headers["location"] == f"/shards/2/events/event?source=inbound&id={dead[2]}"
    assert dead[2] in get(dashboard, found.headers["location"]).text
    hostile = "<script>window.__xss=1</script>"
    missing = get(dashboard, "/events/find", params={"id": hostile})
    assert missing.status_code == 404 and "<script>" not in missing.text

    # A requeue from another origin is refused by the shard's guard, through the front.
    shard, event_id = 1, dead[1]
    form = {"source": "inbound", "id": event_id}
    forged = httpx.post(
        f"{dashboard.url}/shards/{shard}/events/requeue",
        data=form,
        auth=AUTH,
        headers={"Origin": "https://attacker.example"},
    )
    assert forged.status_code == 403
    assert effects(redis, event_id) == 1
    for event_id in dead.values():
        redis.delete(f"fail:{event_id}")
    for shard, event_id in dead.items():
        requeued = httpx.post(
            f"{dashboard.url}/shards/{shard}/events/requeue",
            data={"source": "inbound", "id": event_id},
            auth=AUTH,
            headers={"Origin": dashboard.url},
        )
        assert requeued.status_code == 303, requeued.text
        assert requeued.headers["location"].startswith(f"/shards/{shard}/events/event?")
    wait_until(lambda: all(effects(redis, e) == 2 for e in dead.values()), 30, "the requeues")


def test_a_stopped_primarys_shards_are_said_down_and_the_others_served(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
) -> None:
    cluster = make_sharded_redis(options={"cluster-require-full-coverage": "no"})
    _, dashboard = site(make_stack, cluster, redis_server)
    stopped = cluster.primary_for_slot(SHARDS.slot(2))
    cluster.stop_with_replicas(stopped)

    listing = get(dashboard, "/")
    assert listing.text.count("answers") == SHARDS.count - 1
    assert f"<td>2</td><td>127.0.0.1:{stopped.port}</td><td>down: " in listing.text
    down = get(dashboard, "/shards/2/events")
    assert down.status_code == 503 and "Redis unavailable" in down.text
    assert len(down.text.strip().splitlines()) == 1
    assert get(dashboard, "/shards/0/events").status_code == 200


def test_in_a_browser_each_shards_rq_dashboard_and_events_page_show_its_dead_letter(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
    redis: Redis,
    browser: Any,
) -> None:
    cluster = make_sharded_redis()
    web, dashboard = site(make_stack, cluster, redis_server)
    dead = dead_letter_per_shard(web, redis, "evt_seen", cluster)
    log_in(browser)
    browser.get(dashboard.url + "/")
    wait_until(lambda: page_text(browser).count("answers") == SHARDS.count, 20, "the shards")
    for shard, event_id in dead.items():
        # rq-dashboard's list is filled by its script, from its JSON under /shards/<n>/.
        browser.get(f"{dashboard.url}/shards/{shard}/0/view/jobs/webhooks/failed/8/asc/1")
        job_id = job_id_for("inbound", event_id)
        wait_until(lambda: job_id in page_text(browser), 20, f"shard {shard}'s dead letter")
        browser.get(f"{dashboard.url}/shards/{shard}/events?status=dead")
        wait_until(lambda: event_id in page_text(browser), 20, f"shard {shard}'s Events page")
        others = [other for other in dead.values() if other != event_id]
        assert not any(other in page_text(browser) for other in others)

    # The search of every shard: each one's dead letter, each opened and requeued in a click.
    from selenium.webdriver.common.by import By  # as tests/faults/ do: with the browser

    for event_id in dead.values():
        redis.delete(f"fail:{event_id}")
    for shard, event_id in dead.items():
        browser.get(f"{dashboard.url}/events?status=dead")
        wait_until(lambda: event_id in page_text(browser), 20, "the search of every shard")
        browser.find_element(By.LINK_TEXT, event_id).click()
        wait_until(lambda: "Requeue failed handlers" in page_text(browser), 20, "its page")
        assert browser.current_url.startswith(f"{dashboard.url}/shards/{shard}/events/event?")
        browser.find_element(By.ID, "requeue").click()
        wait_until(lambda: effects(redis, event_id) == 2, 30, f"shard {shard}'s requeue")
    assert all(effects(redis, e) == 2 for e in dead.values())


def test_the_search_of_every_shard_pages_through_each_event_once_newest_first(
    make_sharded_redis: Callable[..., ShardedRedis],
    make_stack: Callable[..., Stack],
    redis_server: RedisServer,
) -> None:
    cluster = make_sharded_redis()
    web, dashboard = site(make_stack, cluster, redis_server)
    events = [f"evt_page{n}" for n in range(60)]
    for event_id in events:
        assert send_one(web.url, event_id, "order.created") == 200
    shown: list[str] = []
    path: str | None = "/events?limit=25"
    while path is not None:
        page = get(dashboard, path)
        assert page.status_code == 200, page.text
        shown += re.findall(r'<a href="/shards/\d/events/event\?[^"]*">([^<]+)</a>', page.text)
        older = re.search(r'<a id="older" href="([^"]+)"', page.text)
        path = html.unescape(older.group(1)) if older else None
    # Sent one after another: newest first is the reverse of the sending order.
    assert shown == events[::-1]
    shards_shown = set(re.findall(r"<td>(\d)</td><td>inbound</td>", get(dashboard, "/events").text))
    assert shards_shown == {"0", "1", "2"}
    # A cursor written by hand starts from the newest; a hostile id is shown as text only.
    forged = get(dashboard, "/events", params={"at": "not-a-cursor", "limit": "25"})
    assert forged.status_code == 200 and events[-1] in forged.text
    hostile = '"><img src=x onerror=alert(1)>'
    assert send_one(web.url, hostile, "order.created") == 200
    for path, params in (("/events", {}), ("/events/find", {"id": hostile, "source": "inbound"})):
        shown = get(dashboard, path, params=params, follow_redirects=True)
        assert shown.status_code == 200, shown.text
        assert "<img src=x" not in shown.text and "&lt;img src=x" in shown.text
