"""On a cluster, /metrics reads every shard's snapshot and shows them as one: counts added,
the oldest waiting event the oldest of all, the scheduler up only when every shard's is."""

from __future__ import annotations

from app.snapshot import PipelineSnapshot, merged


def shard(**values: object) -> PipelineSnapshot:
    return PipelineSnapshot(**values)  # type: ignore[arg-type]


def test_the_shards_snapshots_are_added_and_the_oldest_wait_is_the_oldest_of_all() -> None:
    first = shard(
        queued=3,
        scheduled=1,
        retries_due=1,
        dead=2,
        oldest_queued_age=4.0,
        workers=1,
        scheduler=True,
        outcomes={"stripe": {"done": 5, "dead_lettered": 1}},
        type_outcomes={"stripe": {("invoice.paid", "done"): 5}},
    )
    second = shard(
        queued=4,
        scheduled=2,
        dead=1,
        oldest_queued_age=9.5,
        workers=2,
        scheduler=True,
        outcomes={"stripe": {"done": 2}, "github": {"retried": 3}},
        type_outcomes={"stripe": {("invoice.paid", "done"): 2, ("charge.failed", "done"): 1}},
    )
    assert merged([first, second]) == shard(
        queued=7,
        scheduled=3,
        retries_due=1,
        dead=3,
        oldest_queued_age=9.5,
        workers=3,
        scheduler=True,
        outcomes={"stripe": {"done": 7, "dead_lettered": 1}, "github": {"retried": 3}},
        type_outcomes={"stripe": {("invoice.paid", "done"): 7, ("charge.failed", "done"): 1}},
    )


def test_the_scheduler_is_up_only_when_every_shards_scheduler_is() -> None:
    assert not merged([shard(scheduler=True), shard(scheduler=False)]).scheduler


def test_one_redis_snapshot_is_shown_as_it_is() -> None:
    one = shard(queued=1, scheduler=True)
    assert merged([one]) is one
