"""The receiver's job hash is the one RQ itself would write, field for field, less the fields
RQ writes empty, which it reads back as absent."""

from __future__ import annotations

import pickle
import zlib
from datetime import UTC, datetime
from enum import Enum

from redis import Redis
from rq import Callback
from rq.job import Job, JobStatus, Retry

from app.jobhash import JOB_FUNCTION, ON_FAILURE, JobHash
from workers.runtime.take import read_job


def test_the_template_matches_rqs_own_serialisation() -> None:
    when = datetime(2026, 11, 30, 8, 0, 0, 123456, tzinfo=UTC)
    args = ("inbound", "evt_1", "order.created", b'{"id": "evt_1"}', {"h": "v"}, 1.5)
    meta = {"source": "inbound", "attempts": 0}
    job = Job.create(
        JOB_FUNCTION,
        args=args,
        connection=Redis(),
        id="j",
        origin="webhooks",
        timeout=300,
        description="inbound order.created evt_1",
        meta=meta,
        retry=Retry(max=3, interval=[1, 2, 3]),
        on_failure=Callback(ON_FAILURE),
    )
    job._status = JobStatus.QUEUED
    job.created_at = job.enqueued_at = when
    expected = {k: v for k, v in job.to_dict().items() if v is not None and v != ""}

    pairs = JobHash("webhooks", 300, 3, [1, 2, 3], Redis()).fields(
        args, meta, "inbound order.created evt_1", when
    )
    ours = dict(zip(pairs[::2], pairs[1::2], strict=True))

    assert set(ours) == set(expected)
    # Compression levels differ; what RQ reads back must not.
    assert zlib.decompress(ours.pop("data")) == zlib.decompress(expected.pop("data"))
    assert pickle.loads(ours.pop("meta")) == pickle.loads(expected.pop("meta"))
    assert {k: stored(v) for k, v in ours.items()} == {k: stored(v) for k, v in expected.items()}


def test_rq_reads_the_hash_without_its_empty_fields_as_it_reads_its_own() -> None:
    """What `Job.restore` makes of the receiver's hash is what it makes of `to_dict()`'s,
    with the seven fields RQ writes empty (callbacks, times, worker, group) left out."""
    when = datetime(2026, 11, 30, 8, 0, 0, 123456, tzinfo=UTC)
    args = ("inbound", "evt_1", "order.created", b'{"id": "evt_1"}', {"h": "v"}, 1.5)
    connection = Redis()
    template = JobHash("webhooks", 300, 3, [1, 2, 3], connection)
    pairs = template.fields(args, {"source": "inbound"}, "inbound order.created evt_1", when)
    ours = {k.encode(): as_bytes(v) for k, v in zip(pairs[::2], pairs[1::2], strict=True)}
    job = Job("j", connection=connection)
    job.restore(ours)
    theirs = {k.encode(): as_bytes(v) for k, v in job.to_dict().items() if v is not None}
    empty = {k for k, v in theirs.items() if v == b""}
    assert len(empty) == 7 and not empty & set(ours)
    again = Job("j", connection=connection)
    again.restore(theirs)
    assert vars(again) == vars(job)


def test_the_worker_reads_a_job_as_rqs_restore_reads_it() -> None:
    """The batched worker parses the dates itself (`take.read_job`): the job it gets must be
    RQ's, in the current date format and in the one before microseconds were written."""
    connection = Redis()
    pairs = JobHash("webhooks", 300, 3, [1, 2, 3], connection).fields(
        ("inbound", "evt_1", "order.created", b"{}", {}, 1.5), {}, "d"
    )
    fields = {k.encode(): as_bytes(v) for k, v in zip(pairs[::2], pairs[1::2], strict=True)}
    for stamp in (fields[b"created_at"], b"2026-11-30T08:00:00Z"):
        fields[b"created_at"] = fields[b"enqueued_at"] = stamp
        rqs = Job("j", connection=connection)
        rqs.restore(fields)
        assert vars(read_job("j", fields, connection)) == vars(rqs)


def as_bytes(value: object) -> bytes:
    """What redis-py sends, so what a hash read gives back."""
    return value if isinstance(value, bytes) else stored(value).encode()


def stored(value: object) -> str:
    """What Redis keeps for a value redis-py sends."""
    return str(value.value) if isinstance(value, Enum) else str(value)


def test_the_constant_fields_baked_into_the_script_are_what_redis_py_would_store() -> None:
    template = JobHash("webhooks", 300, 3, [1, 2, 3], Redis())
    literals = template.lua_constant_pairs()
    assert '"status", "queued"' in literals and "JobStatus" not in literals
    assert '"retry_intervals", "[1, 2, 3]"' in literals
