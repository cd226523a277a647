"""The fields of an RQ job hash, built without RQ's `Job` object on the hot path.

`Job.create(...).to_dict()` cost the receiver about a third of its own time per request
(validation, callbacks, date formatting, compressing and pickling every field anew). Most
of those fields are the same for every event: this module asks RQ once for a template,
then fills in only what differs per event: the call data, the meta, the description and
the timestamps, serialised exactly as RQ does (`tests/test_jobhash.py` compares the two),
leaving out the fields RQ would write empty.
The constant fields are even baked into the claim script, so they are not sent per event.
"""

from __future__ import annotations

import pickle
import time
import zlib
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from rq import Callback
from rq.job import Job, JobStatus, Retry
from rq.utils import utcformat

# Import paths stored in every job: RQ imports them when the job runs or is abandoned, so
# they must stay importable as long as such jobs may exist. They name `workers/job.py`, a
# module kept for that alone, so that moving the code never strands queued jobs, and a
# worker of an earlier version still runs the jobs a newer receiver writes.
JOB_FUNCTION = "workers.job.deliver"
ON_FAILURE = "workers.job.on_failure"
# Every job function an event's job may name: this one, and those of earlier versions.
JOB_FUNCTIONS = frozenset({JOB_FUNCTION, "workers.runtime.deliver.deliver"})
PER_EVENT = ("data", "meta", "description", "created_at", "enqueued_at")
# Call data this long or longer is compressed, as RQ compresses all of it; shorter, it is
# stored as the pickle itself, which RQ's `Job.restore` reads too (a zlib stream cannot
# start as a pickle does: `tests/test_jobhash.py`). Starting zlib costs more than a small
# event's whole claim script (~5 µs of the receiver's time per request) to save a few
# dozen bytes; a large payload's saving (half of it, or more) is worth the time.
COMPRESS_FROM = 512


class JobHash:
    def __init__(
        self, origin: str, timeout: int, max_retries: int, intervals: list[int], connection: Any
    ) -> None:
        # RQ's Job wants the connection it belongs to; building the template never uses it.
        job = Job.create(
            JOB_FUNCTION,
            args=(),
            connection=connection,
            on_failure=Callback(ON_FAILURE),
            id="template",
            origin=origin,
            timeout=timeout,
            description="template",
            meta={},
            retry=Retry(max=max_retries, interval=intervals) if max_retries else None,
        )
        job._status = JobStatus.QUEUED
        job.enqueued_at = datetime.now(UTC)
        # RQ writes a field it has no value for as "" and reads "" as absent (`Job.restore`
        # tests each with `obj.get`): seven such fields were a fifth of a queued job's hash,
        # so they are left out (`tests/test_jobhash.py` pins that RQ reads both alike).
        self.constant = [
            item
            for key, value in job.to_dict().items()
            if key not in PER_EVENT and value is not None and value != ""
            # JobStatus is a str Enum: Redis stores its value, so must the script.
            for item in (key, value.value if isinstance(value, Enum) else value)
        ]

    def per_event(
        self,
        args: tuple[Any, ...],
        meta: dict[str, Any],
        description: str,
        when: datetime | None = None,
    ) -> tuple[str, bytes, str, bytes]:
        """Timestamp (created and enqueued), call data, description and meta of one job."""
        data = pickle.dumps((JOB_FUNCTION, None, args, {}), protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) >= COMPRESS_FROM:
            # Level 1: nearly all the saving of the default level at a fraction of its cost.
            data = zlib.compress(data, 1)
        return (
            utcformat(when) if when is not None else stamp_now(),
            data,
            description,
            pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL),
        )

    def fields(
        self,
        args: tuple[Any, ...],
        meta: dict[str, Any],
        description: str,
        when: datetime | None = None,
    ) -> list[Any]:
        """Field/value pairs for HSET, as `Job.to_dict()` would give them, less its empty ones."""
        stamp, data, text, packed_meta = self.per_event(args, meta, description, when)
        return [
            "created_at",
            stamp,
            "enqueued_at",
            stamp,
            "data",
            data,
            "description",
            text,
            "meta",
            packed_meta,
            *self.constant,
        ]

    def lua_constant_pairs(self) -> str:
        """The constant field/value pairs as Lua string literals."""
        return ", ".join(lua_string(item) for item in self.constant)


_second: list[Any] = [0, ""]


def stamp_now() -> str:
    """`utcformat(now)` as RQ writes it, with the formatting of the second done once per
    second: strftime was a twentieth of a request's cost."""
    now = time.time()
    second = int(now)
    if second != _second[0]:
        _second[0], _second[1] = second, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
    return f"{_second[1]}{int((now - second) * 1_000_000):06d}Z"


def lua_string(value: object) -> str:
    """A Lua string literal for any bytes: printable ASCII as is, the rest as \\ddd escapes."""
    raw = value if isinstance(value, bytes) else str(value).encode()
    body = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:03d}" for b in raw)
    return f'"{body}"'
