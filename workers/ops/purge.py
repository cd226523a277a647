"""Purging a dead letter: out of the failed registry and deleted, in one atomic step.

Every purge goes through here: `webhooks dead purge`, the Events page's bulk purge, and
rq-dashboard's delete and empty of the webhook queue's dead letters (`dashboard_purge.py`).

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
"""

from __future__ import annotations

from typing import NamedTuple

from redis import Redis

from app.claim import call, script_prologue
from app.keys import Keys


class PurgeKeys(NamedTuple):
    failed_key: str  # the dead letters: RQ's failed registry of the queue
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


PURGE = (
    script_prologue(PurgeKeys, PurgeArgs)
    + """
if redis.call('ZREM', failed_key, job_id) == 0 then
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


class Purge:
    """Purges dead letters of one queue, one job id at a time."""

    def __init__(self, keys: Keys, connection: Redis) -> None:
        self.keys = keys
        self.script = connection.register_script(PURGE)

    def __call__(self, job_id: str) -> bool:
        """True when it purged the job; False when the job was no longer a dead letter
        (requeued, purged or expired since it was listed): then nothing of it changed."""
        keys = PurgeKeys(
            failed_key=self.keys.failed,
            queue_key=self.keys.queue,
            started_key=self.keys.started,
            executions_key=self.keys.executions(job_id),
            job_key=self.keys.job(job_id),
            dependents_key=self.keys.dependents(job_id),
            dependencies_key=self.keys.dependencies(job_id),
            results_key=self.keys.results(job_id),
        )
        names, args = call(
            keys, PurgeArgs(job_id, self.keys.execution_prefix, self.keys.worker_prefix)
        )
        return bool(self.script(keys=names, args=args))
