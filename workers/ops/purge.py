"""Purging a settled job: out of its registry and deleted, in one atomic step.

Every purge goes through here: `webhooks dead purge`, the Events page's bulk purge, and
rq-dashboard's delete and empty of the webhook queue's settled jobs (`dashboard_guard.py`):
its dead letters (the failed registry), and its finished and canceled jobs.

RQ's `registry.remove(job, delete_job=True)` deletes the job whatever became of it since
it was read: a dead letter requeued in between (by the command, the Events page,
rq-dashboard or `rq requeue`) lost its hash and its queue entry while its ledger record
said queued, and its handlers never ran. RQ's requeue takes a job out of the failed
registry with a ZREM before it enqueues it: that ZREM is the claim. The purge script makes
the same claim, and deletes the job only when its own ZREM took it out, in the same step;
otherwise the job is someone else's now and the purge answers that it skipped it.

What it deletes is what RQ 3.0's `Job.delete()` deletes for a failed job: its entry in the
queue (a dead letter has none), its executions (each one's hash, its member of the started
registry and of its worker's set, then the job's set of them), the job hash, its
dependents and dependencies keys, and its results. Our jobs belong to no group and have no
rate limit, the two things `Job.delete()` also handles. The ledger record is left as it
was: it says dead, and a replay enqueues the event again from its stored payload.

A finished (or canceled) job has no such claim: a replay enqueues the event again by
writing a new job hash over it (status `queued`), and leaves the registry's member, which
RQ's cleanup drops. So its purge also requires the job's status to be the one it was
listed with, in the same step: a job replayed since is left whole.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from redis import Redis

from app.claim import call, script_prologue
from app.keys import Keys


class PurgeKeys(NamedTuple):
    registry_key: str  # where the job settled: RQ's failed (dead letters), finished or canceled
    queue_key: str
    started_key: str  # the started registry (members `<job id>:<execution id>`)
    executions_key: str  # the job's executions
    job_key: str
    dependents_key: str
    dependencies_key: str
    results_key: str


class PurgeArgs(NamedTuple):
    job_id: str
    execution_prefix: str  # RQ's, of an execution's hash
    worker_prefix: str  # RQ's, of a worker's set of executions
    status: str  # the job's, required; empty: the registry's ZREM is the claim (failed)


PURGE = (
    script_prologue(PurgeKeys, PurgeArgs)
    + """
if status ~= '' and redis.call('HGET', job_key, 'status') ~= status then
  return 0
end
if redis.call('ZREM', registry_key, job_id) == 0 then
  return 0
end
redis.call('LREM', queue_key, 1, job_id)
for _, id in ipairs(redis.call('ZRANGE', executions_key, 0, -1)) do
  local member = job_id .. ':' .. id
  local execution = execution_prefix .. member
  local worker = redis.call('HGET', execution, 'worker_name')
  if worker and worker ~= '' then
    redis.call('SREM', worker_prefix .. worker .. ':executions', member)
  end
  redis.call('DEL', execution)
  redis.call('ZREM', started_key, member)
end
redis.call('DEL', executions_key, job_key, dependents_key, dependencies_key, results_key)
return 1
"""
)


class Settled(Enum):
    """The registries a purge takes a job from, each with the status it requires (none for
    the failed registry, whose ZREM is RQ's requeue's claim too)."""

    FAILED = "failed"
    FINISHED = "finished"
    CANCELED = "canceled"

    def key(self, keys: Keys) -> str:
        return str(getattr(keys, self.value))  # Keys.failed, .finished or .canceled

    @property
    def status(self) -> str:
        return "" if self is Settled.FAILED else self.value


class Purge:
    """Purges the settled jobs of one queue's registry (the dead letters unless told),
    one job id at a time."""

    def __init__(self, keys: Keys, connection: Redis, registry: Settled = Settled.FAILED) -> None:
        self.keys = keys
        self.registry = registry
        self.script = connection.register_script(PURGE)

    def __call__(self, job_id: str) -> bool:
        """True when it purged the job; False when the job was no longer there (a dead letter
        requeued, a finished job replayed, purged or expired since it was listed): then
        nothing of it changed."""
        keys = PurgeKeys(
            registry_key=self.registry.key(self.keys),
            queue_key=self.keys.queue,
            started_key=self.keys.started,
            executions_key=self.keys.executions(job_id),
            job_key=self.keys.job(job_id),
            dependents_key=self.keys.dependents(job_id),
            dependencies_key=self.keys.dependencies(job_id),
            results_key=self.keys.results(job_id),
        )
        args = PurgeArgs(
            job_id, self.keys.execution_prefix, self.keys.worker_prefix, self.registry.status
        )
        names, values = call(keys, args)
        return bool(self.script(keys=names, args=values))
