"""The receiver's job hash is the one RQ itself would write, field for field, less the fields
RQ writes empty, which it reads back as absent."""

from __future__ import annotations

import pickle
import zlib
from datetime import UTC, datetime
from enum import Enum

import pytest
from redis import Redis
from rq import Callback
from rq.job import Job, JobStatus, Retry

from app.jobhash import COMPRESS_FROM, JOB_FUNCTION, ON_FAILURE, JobHash
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
    # Compression differs (a small call is not compressed); what RQ reads back must not.
    assert call_data(ours.pop("data")) == zlib.decompress(expected.pop("data"))
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


def call_data(stored: bytes) -> bytes:
    """The pickled call in a job hash's `data`, read as `Job.restore` reads it."""
    job = Job("j", connection=Redis())
    job.restore({b"data": stored, b"created_at": b"2026-11-30T08:00:00.000000Z"})
    return bytes(job.data)


@pytest.mark.parametrize("body_bytes", [10, COMPRESS_FROM, 20_000])
def test_rq_reads_the_call_data_compressed_or_not(body_bytes: int) -> None:
    """Below COMPRESS_FROM the pickle is stored as it is; RQ's restore reads it (its
    fallback for data that is not a zlib stream) as it reads a compressed one."""
    args = ("inbound", "evt_1", "order.created", b"x" * body_bytes, {"h": "v"}, 1.5)
    pairs = JobHash("webhooks", 300, 3, [1, 2, 3], Redis()).fields(args, {}, "d")
    data = dict(zip(pairs[::2], pairs[1::2], strict=True))["data"]
    pickled = pickle.dumps((JOB_FUNCTION, None, args, {}), protocol=pickle.HIGHEST_PROTOCOL)
    assert (data == pickled) is (len(pickled) < COMPRESS_FROM)
    job = Job("j", connection=Redis())
    job.restore({b"data": data, b"created_at": b"2026-11-30T08:00:00.000000Z"})
    assert (job.func_name, job.args, job.kwargs) == (JOB_FUNCTION, args, {})


@pytest.mark.parametrize("pickle_bytes", [COMPRESS_FROM - 1, COMPRESS_FROM])
def test_call_data_is_compressed_from_exactly_compress_from_bytes(pickle_bytes: int) -> None:
    args = args_pickling_to(pickle_bytes)
    pairs = JobHash("webhooks", 300, 3, [1, 2, 3], Redis()).fields(args, {}, "d")
    data = dict(zip(pairs[::2], pairs[1::2], strict=True))["data"]
    pickled = pickle.dumps((JOB_FUNCTION, None, args, {}), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(pickled) == pickle_bytes
    stored_as_is = pickle_bytes < COMPRESS_FROM
    assert (data if stored_as_is else zlib.decompress(data)) == pickled
    assert (data == pickled) is stored_as_is


def args_pickling_to(size: int) -> tuple[object, ...]:
    """An event's call arguments whose call data pickles to exactly `size` bytes."""
    for body_bytes in range(size):
        args = ("inbound", "evt_1", "order.created", b"x" * body_bytes, {"h": "v"}, 1.5)
        call = (JOB_FUNCTION, None, args, {})
        if len(pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)) == size:
            return args
    raise AssertionError(f"no body pickles to {size} bytes")


def test_no_pickle_reads_as_a_zlib_stream() -> None:
    """RQ tells the two apart by trying zlib first: a pickle's opening bytes (protocol 2
    and later: PROTO, then its number) never make a zlib header, whose method must be 8."""
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        opening = pickle.dumps((JOB_FUNCTION, None, (), {}), protocol=protocol)
        with pytest.raises(zlib.error):
            zlib.decompress(opening)
        assert opening[0] & 0x0F != 8


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
