"""The Lua scripts that put an event in Redis, with their keys and arguments named once.

The claim script checks, writes the job hash exactly as RQ's `job.to_dict()` serialises it,
registers the queue, pushes the job id, writes the ledger record, and only then sets the
dedupe key, in one round trip that Redis runs without interleaving. The payload is stored
once: in the job's call data until the event settles, when the worker copies it into the
ledger record, which outlives the job. Each script's KEYS and
ARGV are the fields of a named tuple, in order; the script's first lines bind them to the
same names (`script_prologue`), so Python and Lua cannot disagree on a position. Named
tuples, not dataclasses: built on every request, a tuple is its own argument list.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from app.jobstate import PENDING, EventStatus


class ClaimKeys(NamedTuple):
    seen_key: str  # the dedupe key (SET NX EX, last)
    job_key: str  # RQ's job hash
    queue_key: str  # RQ's queue list
    queues_key: str  # RQ's set of queues
    event_key: str  # the ledger record
    events_key: str  # the ledger's index, by receipt time
    # Where the signature does not cover the id: the dedupe key of the signed bytes, so a
    # captured request re-sent under a fresh id is a duplicate too. Else `seen_key` again.
    signed_key: str


class ClaimArgs(NamedTuple):
    dedupe_ttl: int
    job_id: str
    ledger_ttl: int
    received_at: float
    job_stamp: str  # created_at and enqueued_at, as RQ formats them
    job_data: bytes  # RQ's pickle of the call, zlib-compressed from COMPRESS_FROM bytes
    description: str
    meta: bytes  # RQ's pickle of `JobMeta.to_meta()`
    event_id: str
    event_type: str
    payload_format: str  # a PayloadFormat: how the worker parses the payload
    source: str
    trace: str  # the receiver's span (`app/tracing.py`), kept for a replay to link to; or ''


def script_prologue(keys: type[Any], args: type[Any]) -> str:
    """`local <name> = KEYS[i]` / `ARGV[i]` for every field of the two named tuples."""
    lines = [f"local {name} = KEYS[{i}]" for i, name in enumerate(keys._fields, 1)]
    lines += [f"local {name} = ARGV[{i}]" for i, name in enumerate(args._fields, 1)]
    return "\n".join(lines) + "\n"


def call(keys: tuple[Any, ...], args: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """KEYS and ARGV, in field order."""
    return list(keys), list(args)


# Every check runs before the first write, so an error never leaves half an event.
# An event whose job still exists is a duplicate too, even after its dedupe key expired:
# enqueuing an existing job id would merge into the old hash and run it twice.
_CLAIM_BODY = f"""
local by_bytes = signed_key ~= seen_key
if redis.call('EXISTS', seen_key) == 1 or redis.call('EXISTS', job_key) == 1
   or (by_bytes and redis.call('EXISTS', signed_key) == 1) then
  return 0
end
local kind = redis.call('TYPE', queue_key)['ok']
if kind ~= 'none' and kind ~= 'list' then
  return redis.error_reply('queue key ' .. queue_key .. ' holds a ' .. kind)
end
redis.call('HSET', job_key, 'created_at', job_stamp, 'enqueued_at', job_stamp,
           'data', job_data, 'description', description, 'meta', meta, CONSTANT_JOB_FIELDS)
redis.call('SADD', queues_key, queue_key)
redis.call('RPUSH', queue_key, job_id)
-- A record left by an earlier delivery of this id (its dedupe key and job expired since)
-- goes: its payload, settled time, error and format describe that delivery, not this one.
redis.call('DEL', event_key)
-- The job id follows from source and id, and JSON is the default format: neither is stored.
redis.call('HSET', event_key, 'source', source, 'id', event_id, 'type', event_type,
           'status', '{EventStatus.QUEUED}', 'attempts', '0', 'received_at', received_at)
if payload_format ~= 'json' then
  redis.call('HSET', event_key, 'format', payload_format)
end
if trace ~= '' then
  redis.call('HSET', event_key, 'trace', trace)
end
redis.call('EXPIRE', event_key, ledger_ttl)
redis.call('ZADD', events_key, received_at, event_key)
redis.call('ZREMRANGEBYSCORE', events_key, '-inf', tonumber(received_at) - tonumber(ledger_ttl))
redis.call('SET', seen_key, '1', 'EX', dedupe_ttl)
if by_bytes then
  redis.call('SET', signed_key, '1', 'EX', dedupe_ttl)
end
return 1
"""


def claim_script(constant_job_fields: str) -> str:
    """The claim script with a configuration's constant job fields written in (Lua literals)."""
    body = _CLAIM_BODY.replace("CONSTANT_JOB_FIELDS", constant_job_fields)
    return script_prologue(ClaimKeys, ClaimArgs) + body


class EnqueueKeys(NamedTuple):
    job_key: str
    queue_key: str
    queues_key: str
    # The ledger record to mark queued again; its own key when there is none to mark.
    event_key: str
    # Where a replay looks for the job still alive (RQ's names; see `EnqueueArgs.replay`).
    # Not read for a job id of its own (log-only mode): `without_replay` fills them with the job's
    # key, since a cluster refuses a script whose keys span slots (an empty name is slot 0).
    intermediate_key: str  # taken by a worker, not yet started
    started_key: str  # the started registry (members `<job id>:<execution id>`)
    scheduled_key: str  # waiting for a retry
    executions_key: str  # the job's executions

    @classmethod
    def without_replay(
        cls, job_key: str, queue_key: str, queues_key: str, event_key: str
    ) -> EnqueueKeys:
        return cls(job_key, queue_key, queues_key, event_key, *[job_key] * 4)


class EnqueueArgs(NamedTuple):
    job_id: str
    # 1: a replay of an event under its own job id. The script then enqueues only when
    # nothing else will run it (else it answers 0), and marks the ledger record queued.
    replay: int


_PENDING = " or ".join(f"status == '{s}'" for s in sorted(PENDING))

# Enqueues a job whose fields follow in ARGV: a log-only would-be duplicate (a job id of
# its own), or an event re-run from the ledger (whose finished job's leftover hash goes).
# A replay decides here, in the same atomic step as the enqueue, that the event's job will
# not run otherwise: two replays, or a replay and a requeue, then never queue it twice, and
# a running job's hash is never replaced under its worker. A job that is gone (while its
# record still says pending: the job was lost) may be replayed.
ENQUEUE = (
    script_prologue(EnqueueKeys, EnqueueArgs)
    + f"""
if replay == '1' then
  local status = redis.call('HGET', event_key, 'status')
  if ({_PENDING}) and redis.call('EXISTS', job_key) == 1 then
    return 0
  end
  if redis.call('LPOS', queue_key, job_id) or redis.call('LPOS', intermediate_key, job_id)
     or redis.call('ZSCORE', scheduled_key, job_id)
     or redis.call('EXISTS', executions_key) == 1 then
    return 0
  end
  -- RQ's requeue of a failed job takes it out of the failed registry, then enqueues it in
  -- a second round trip: in between, only the job's status says that it is coming back.
  if redis.call('HGET', job_key, 'status') == 'failed' then
    return 0
  end
  local cursor = '0'
  repeat
    local found = redis.call('ZSCAN', started_key, cursor, 'MATCH', job_id .. ':*', 'COUNT', 200)
    if #found[2] > 0 then
      return 0
    end
    cursor = found[1]
  until cursor == '0'
end
redis.call('DEL', job_key)
redis.call('HSET', job_key, unpack(ARGV, 3))
redis.call('SADD', queues_key, queue_key)
redis.call('RPUSH', queue_key, job_id)
if replay == '1' and redis.call('EXISTS', event_key) == 1 then
  redis.call('HSET', event_key, 'status', '{EventStatus.QUEUED}')
end
return 1
"""
)
