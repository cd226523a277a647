"""On a Redis Cluster a script may touch the keys of one hash slot only. Every claim the
receiver makes, for every provider, keeps its keys in the slot of its event's shard
(`app/shards.py`): checked here on the script calls themselves, by CRC16, without a cluster.
The scripts run on the suite's Redis all the same, so the sharded keys are also shown to
queue an event and refuse its redelivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from app.intake import AsyncIntake
from app.providers import verifier_for
from app.shards import Shards, shard_tag
from tests.providers.cases import CASES, Case
from tests.providers.test_every_provider import accepted, post

SHARDS = Shards(16)


def slots(keys: list[str]) -> set[int]:
    return {key_slot(key.encode()) for key in keys}


class Recorder:
    """Wraps script callables (one per shard): every call's KEYS are kept, in order, and
    the call goes on unchanged."""

    def __init__(self) -> None:
        self.keys: list[list[str]] = []

    def wrap(self, script: Any) -> Any:
        """A claim batcher, called with KEYS first."""

        async def call(keys: list[str], *rest: Any, **kw: Any) -> Any:
            self.keys.append(list(keys))
            return await script(keys, *rest, **kw)

        call.full = script.full  # type: ignore[attr-defined]  # asked before each request
        return call

    def wrap_keyword(self, script: Any) -> Any:
        """A registered script, called with `keys=`."""

        async def call(*rest: Any, keys: list[str], **kw: Any) -> Any:
            self.keys.append(list(keys))
            return await script(*rest, keys=keys, **kw)

        return call


def sharded_client(
    make_client: Callable[..., TestClient], **config: Any
) -> tuple[TestClient, Recorder]:
    """A receiver whose intake is on 16 shards, its claim calls recorded."""
    client = make_client(**config)
    receiver = client.app.app.state.receiver  # type: ignore[attr-defined]
    # Every shard's client on the suite's one Redis: the keys are what is checked here.
    intake = AsyncIntake(receiver.settings, receiver.redis, SHARDS, [receiver.redis] * SHARDS.count)
    recorder = Recorder()
    intake.claims = [recorder.wrap(claim) for claim in intake.claims]  # type: ignore[misc]
    receiver.intake = intake
    return client, recorder


def test_each_shards_tag_is_in_its_own_equal_range_of_slots() -> None:
    for count in (1, 3, 16, 100):
        for shard in range(count):
            low = shard * REDIS_CLUSTER_HASH_SLOTS // count
            high = (shard + 1) * REDIS_CLUSTER_HASH_SLOTS // count
            assert low <= key_slot(shard_tag(shard, count)[1:-1].encode()) < high


def test_sixteen_shards_spread_evenly_over_three_primaries_of_equal_ranges() -> None:
    # `redis-cli --cluster create` with three primaries: 0-5460, 5461-10922, 10923-16383.
    owners = [min(SHARDS.slot(shard) // 5461, 2) for shard in SHARDS]
    assert sorted(owners.count(primary) for primary in range(3)) == [5, 5, 6]


def test_an_events_shard_depends_on_its_source_and_id_only_and_never_changes() -> None:
    # Pinned: a new function would move ids to other shards, and a redelivery in the dedupe
    # window would be claimed again in its new shard.
    assert [SHARDS.of("stripe", f"evt_{n}") for n in range(6)] == [14, 1, 13, 6, 6, 14]
    assert SHARDS.of("stripe", "evt_1") != SHARDS.of("github", "evt_1")
    assert SHARDS.of("stripe", None) == SHARDS.of("stripe", None)


def test_a_shard_count_out_of_bounds_is_refused_in_its_setting_name() -> None:
    for count in (0, 1025):
        with pytest.raises(ValueError, match="WEBHOOK_SHARDS must be 1 to 1024"):
            Shards(count)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_providers_claim_keeps_its_keys_in_its_events_shard_slot(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    key = case.make_key("k1")
    client, recorder = sharded_client(make_client, **case.config(key))
    signed = case.signed(key, "evt-shard.1")
    assert accepted(case, post(client, case, signed), signed.event_id)
    queued = set(redis.keys("*rq:queue:*"))
    lengths = {name: redis.llen(name) for name in queued}
    assert post(client, case, signed).status_code == 200  # a redelivery: queues nothing
    assert {name: redis.llen(name) for name in redis.keys("*rq:queue:*")} == lengths

    receiver = client.app.app.state.receiver  # type: ignore[attr-defined]
    id_signed = verifier_for(receiver.settings.sources[case.name], receiver.fetcher).id_signed
    assert recorder.keys  # a batch provider claims each of its events
    for keys in recorder.keys:
        event_id = keys[4].split(f":event:{case.name}:", 1)[1]
        tag = SHARDS.tag(SHARDS.of(case.name, event_id if id_signed else None))
        assert all(name.startswith(f"{tag}:") for name in keys), keys
        assert slots(keys) == {key_slot(tag.encode())}, keys
        assert redis.exists(keys[1]) and keys[1].startswith(f"{tag}:rq:job:")


LOG_ONLY = [c for c in CASES if c.provider in ("stripe", "mailgun")]


@pytest.mark.parametrize("case", LOG_ONLY, ids=[c.name for c in LOG_ONLY])
def test_a_log_only_duplicates_job_is_in_the_shard_its_claim_went_to(
    case: Case, make_client: Callable[..., TestClient], redis: Redis
) -> None:
    key = case.make_key("k1")
    client, claims = sharded_client(make_client, webhook_dedupe_mode="log-only", **case.config(key))
    intake = client.app.app.state.receiver.intake  # type: ignore[attr-defined]
    enqueues = Recorder()
    intake.enqueue_scripts = [enqueues.wrap_keyword(s) for s in intake.enqueue_scripts]
    signed = case.signed(key, "evt-shard.2")
    for _ in range(2):
        assert post(client, case, signed).status_code == 200
    [claim, _], [duplicate] = claims.keys, enqueues.keys
    assert slots(duplicate) == slots(claim) and len(slots(claim)) == 1
    assert redis.exists(duplicate[0]) and "-dup-" in duplicate[0]
