"""WEBHOOK_REPLICA_ACKS: what a 200 promises when the primary is lost.

The pair of failover tests is the proof that the setting matters: the same deterministic
loss (replication stalled, then the primary SIGKILLed and a replica promoted by Sentinel)
loses acknowledged events at N=0 and none at N=1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from app.keys import Keys, job_id_for
from app.settings import Settings
from tests.conftest import event_body, metric_value, sign
from tests.ha.harness import MASTER, Cluster

KEYS = Keys("webhook", "webhooks")


def post(client: TestClient, event_id: str) -> tuple[int, str]:
    body = event_body(event_id)
    response = client.post(
        "/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)}
    )
    status = response.json().get("status", "") if response.status_code == 200 else ""
    return response.status_code, status


def post_until_200(client: TestClient, event_id: str, timeout: float = 20) -> str:
    """As a provider does: a 503 is sent again. Returns accepted or duplicate (a duplicate
    when an earlier try's claim landed but was not acknowledged in time)."""
    deadline = time.monotonic() + timeout
    while True:
        code, status = post(client, event_id)
        if code == 200 or time.monotonic() > deadline:
            assert code == 200, f"{event_id}: still {code}"
            return status
        time.sleep(0.1)


def stored(redis: Redis, event_id: str) -> bool:
    return bool(
        redis.exists(KEYS.seen("inbound", event_id), KEYS.job(job_id_for("inbound", event_id)))
    )


def failover_with_replication_stalled(
    make_cluster: Callable[..., Cluster],
    make_client: Callable[..., TestClient],
    acks: int,
) -> tuple[Cluster, TestClient, dict[str, tuple[int, str]]]:
    """Ten events replicated, then replication stalled and eight more sent, then the primary
    SIGKILLed and its replica promoted. Returns every answer given."""
    cluster = make_cluster(replicas=1, proxied=True)
    client = make_client(
        redis_url="redis:///0",
        redis_sentinels=cluster.sentinel_list,
        redis_sentinel_master=MASTER,
        webhook_replica_acks=acks,
        webhook_replica_ack_timeout=1.0,  # a busy machine: the stall, not slowness, decides
    )
    answers = {f"evt_{n}": (200, post_until_200(client, f"evt_{n}")) for n in range(10)}
    cluster.wait_synced()
    cluster.links[0].stall()  # the replica now receives nothing new
    answers |= {f"evt_{n}": post(client, f"evt_{n}") for n in range(10, 18)}
    cluster.kill_primary()
    cluster.wait_promotion()
    return cluster, client, answers


def test_without_replica_acks_a_failover_loses_acknowledged_events(
    make_cluster: Callable[..., Cluster], make_client: Callable[..., TestClient]
) -> None:
    cluster, _, answers = failover_with_replication_stalled(make_cluster, make_client, 0)
    acknowledged = [e for e, (code, _) in answers.items() if code == 200]
    assert len(acknowledged) == 18  # N=0: the primary alone decides
    new_primary = cluster.client(cluster.nodes[1])
    lost = [e for e in acknowledged if not stored(new_primary, e)]
    assert len(lost) >= 1, "the stalled events should be acknowledged yet lost"


def test_with_one_replica_ack_a_failover_loses_none_and_retries_are_accepted_once(
    make_cluster: Callable[..., Cluster], make_client: Callable[..., TestClient]
) -> None:
    cluster, client, answers = failover_with_replication_stalled(make_cluster, make_client, 1)
    stalled = [f"evt_{n}" for n in range(10, 18)]
    assert all(answers[e][0] == 503 for e in stalled), [
        (e, answers[e]) for e in stalled if answers[e][0] != 503
    ]
    new_primary = cluster.client(cluster.nodes[1])
    acknowledged = [e for e, (code, _) in answers.items() if code == 200]
    assert acknowledged and all(stored(new_primary, e) for e in acknowledged)
    # The old primary comes back as a replica of the new one, so a replica can acknowledge
    # again; the providers' retries are then accepted, once each.
    cluster.rejoin(cluster.primary, cluster.nodes[1])
    # Accepted (or, when a try's acknowledgement came too late, duplicate): one job each.
    assert all(post_until_200(client, e) in ("accepted", "duplicate") for e in stalled)
    assert {e: post(client, e) for e in stalled} == dict.fromkeys(stalled, (200, "duplicate"))
    queued = [j.decode() for j in new_primary.lrange(KEYS.queue, 0, -1)]
    assert sorted(queued) == sorted(job_id_for("inbound", e) for e in answers)


def test_a_frozen_replica_gets_no_200_given_and_retries_after_it_thaws_are_duplicates(
    make_cluster: Callable[..., Cluster],
    make_client: Callable[..., TestClient],
    make_settings: Callable[..., Settings],
) -> None:
    cluster = make_cluster(replicas=1, sentinels=0)
    replica = cluster.nodes[1]
    token = "t" * 40
    client = make_client(
        redis_url=cluster.primary.url,
        webhook_replica_acks=1,
        webhook_replica_ack_timeout=0.3,
        webhook_replay_token=token,
    )
    assert post_until_200(client, "evt_before") == "accepted"
    cluster.freeze(replica)  # SIGSTOP: connected, but acknowledges nothing
    during = {e: post(client, e) for e in ("evt_a", "evt_b", "evt_before")}
    replayed = client.post(
        "/webhooks/inbound/replay",
        content=event_body("evt_replayed"),
        headers={"X-Replay-Token": token},
    )
    assert [code for code, _ in during.values()] == [503, 503, 503]  # the duplicate too
    assert replayed.status_code == 503
    cluster.thaw(replica)
    cluster.wait_synced()
    for event_id in ("evt_a", "evt_b", "evt_before"):
        assert post_until_200(client, event_id) == "duplicate"
    primary = cluster.client(cluster.primary)
    queued = [j.decode() for j in primary.lrange(KEYS.queue, 0, -1)]
    expected = ["evt_before", "evt_a", "evt_b", "evt_replayed"]
    assert sorted(queued) == sorted(job_id_for("inbound", e) for e in expected)


def test_a_claim_the_replicas_did_not_acknowledge_is_counted_as_not_replicated(
    make_cluster: Callable[..., Cluster], make_client: Callable[..., TestClient]
) -> None:
    """Its own reason, apart from Redis failures, so that its alert names the replicas."""
    cluster = make_cluster(replicas=1, sentinels=0)
    client = make_client(
        redis_url=cluster.primary.url, webhook_replica_acks=1, webhook_replica_ack_timeout=0.3
    )

    def refusals() -> tuple[float, float]:
        text = client.get("/metrics").text
        return tuple(  # type: ignore[return-value]
            metric_value(text, "webhooks_rejected_total", source="inbound", reason=reason)
            for reason in ("not_replicated", "queue_unavailable")
        )

    assert post_until_200(client, "evt_before") == "accepted"
    before = refusals()
    cluster.freeze(cluster.nodes[1])
    try:
        assert [post(client, e)[0] for e in ("evt_a", "evt_b")] == [503, 503]
    finally:
        cluster.thaw(cluster.nodes[1])
    after = refusals()
    assert (after[0] - before[0], after[1] - before[1]) == (2, 0)


def test_the_log_only_and_replay_command_paths_wait_for_the_replicas_too(
    make_cluster: Callable[..., Cluster], make_settings: Callable[..., Settings]
) -> None:
    import asyncio

    from app.intake import AsyncIntake, SyncIntake
    from app.main import redis_client
    from app.providers import Delivery
    from app.replication import NotReplicated

    cluster = make_cluster(replicas=1, sentinels=0)
    settings = make_settings(
        redis_url=cluster.primary.url,
        webhook_replica_acks=1,
        webhook_replica_ack_timeout=1.0,
        webhook_dedupe_mode="log-only",
    )
    source = settings.sources["inbound"]
    sync = SyncIntake(settings, Redis.from_url(cluster.primary.url))
    delivery = Delivery("evt_sync", "order.created")
    assert sync.claim_and_enqueue(source, delivery, event_body("evt_sync"), 1.0).accepted

    async def log_only_duplicate() -> Any:
        redis = redis_client(settings)
        try:
            intake = AsyncIntake(settings, redis)
            _, keys, args = intake.duplicate_call(source, delivery, event_body("evt_sync"), 1.0)
            return await intake.enqueue(keys, args)
        finally:
            await redis.aclose()

    cluster.freeze(cluster.nodes[1])
    with pytest.raises(NotReplicated):
        sync.claim_and_enqueue(source, Delivery("evt_2", "x"), event_body("evt_2"), 1.0)
    with pytest.raises(NotReplicated):
        asyncio.run(log_only_duplicate())
    cluster.thaw(cluster.nodes[1])
    cluster.wait_synced()
    asyncio.run(log_only_duplicate())  # acknowledged now: no error
