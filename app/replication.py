"""WEBHOOK_REPLICA_ACKS: a 200 only once N replicas hold what it acknowledges.

Redis replicates asynchronously: a primary that dies a moment after a claim can take the
claim with it, and Sentinel promotes a replica that never saw it. `WAIT N timeout` after the
claim waits until N replicas have received every write this connection made (`WAITAOF 1 N
timeout`: until the primary and N replicas have written them to their append-only files).

Two things make it cover every answer:
- the wait follows the writes on the same connection: it is sent in the same pipeline as
  the claim scripts of a batch (one wait per batch, not per request);
- a duplicate answer writes nothing itself, yet may answer for another connection's claim
  that is not replicated yet. So the pipeline first writes a marker (INCR): replication
  is in order, so once the marker is acknowledged, every write the primary had applied
  before it is too, that claim included.
Fewer acknowledgements than N raise `NotReplicated`, a RedisError: every request of the
batch is answered 503 like any other Redis failure. The claim may well be on the primary, so
the provider's retry is answered `duplicate` (with one job), once it is replicated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from redis.exceptions import RedisError, ResponseError

from app.settings import ConfigError, Settings


class NotReplicated(RedisError):
    """Fewer replicas than WEBHOOK_REPLICA_ACKS acknowledged within the timeout."""


@dataclass(frozen=True, slots=True)
class ReplicaAcks:
    replicas: int
    timeout_ms: int
    mode: str  # "wait" or "waitaof"
    marker_key: str

    @staticmethod
    def of(settings: Settings) -> ReplicaAcks | None:
        if settings.webhook_replica_acks == 0:
            return None
        return ReplicaAcks(
            settings.webhook_replica_acks,
            max(1, round(settings.webhook_replica_ack_timeout * 1000)),
            settings.webhook_replica_ack_mode,
            f"{settings.webhook_key_prefix}:replicated",
        )

    def under(self, prefix: str) -> ReplicaAcks:
        """The same wait, its marker under `prefix`: a shard's, on a cluster, where the
        marker must be in the slot of the claims it follows."""
        return replace(self, marker_key=f"{prefix}:replicated")

    def command(self) -> tuple[Any, ...]:
        if self.mode == "waitaof":
            return ("WAITAOF", 1, self.replicas, self.timeout_ms)
        return ("WAIT", self.replicas, self.timeout_ms)

    def commands(self) -> list[tuple[Any, ...]]:
        """The marker and the wait, to follow the writes they confirm."""
        return [("INCR", self.marker_key), self.command()]

    def add_to(self, pipe: Any) -> int:
        """Append the marker and the wait to a pipeline; returns how many replies they add."""
        commands = self.commands()
        for command in commands:
            pipe.execute_command(*command)
        return len(commands)

    def check(self, replies: list[Any]) -> None:
        """Raise unless the wait's reply (the last of `replies`) reports enough copies."""
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        reply = replies[-1]
        if self.mode == "waitaof":
            local, replicas = int(reply[0]), int(reply[1])
            if local < 1 or replicas < self.replicas:
                raise NotReplicated(
                    f"the claim is in {replicas} replicas' append-only files (local: "
                    f"{local}), WEBHOOK_REPLICA_ACKS={self.replicas}, within "
                    f"{self.timeout_ms} ms"
                )
            return
        if int(reply) < self.replicas:
            raise NotReplicated(
                f"{int(reply)} of WEBHOOK_REPLICA_ACKS={self.replicas} replicas acknowledged "
                f"within {self.timeout_ms} ms"
            )


def refusal(acks: ReplicaAcks, error: ResponseError, version: str) -> ConfigError:
    """The startup error for a server that cannot do what WEBHOOK_REPLICA_ACK_MODE asks."""
    text = str(error).lower()
    if "unknown command" in text:
        return ConfigError(
            f"WEBHOOK_REPLICA_ACK_MODE={acks.mode}: this server ({version}) has no "
            f"{acks.command()[0]}; WAITAOF needs Redis >= 7.2 or Valkey >= 7.2 (or set "
            "WEBHOOK_REPLICA_ACK_MODE=wait)"
        )
    if "appendonly" in text:
        return ConfigError(
            "WEBHOOK_REPLICA_ACK_MODE=waitaof needs appendonly yes on the primary "
            "(WAITAOF counts its own append-only file too)"
        )
    return ConfigError(
        f"WEBHOOK_REPLICA_ACKS: the server refused {acks.command()[0]} ({error}); "
        "a managed Redis may not allow it"
    )


def probe(acks: ReplicaAcks) -> tuple[Any, ...]:
    """A wait that returns at once (nothing written yet on this connection) or fails when
    the command is missing or not allowed: what startup sends to check support."""
    if acks.mode == "waitaof":
        return ("WAITAOF", 1, 0, 100)
    return ("WAIT", 0, 100)


def check_support_sync(redis: Any, acks: ReplicaAcks | None) -> None:
    """For the blocking client (`webhooks replay`): refuse at once, naming the setting."""
    if acks is None:
        return
    try:
        redis.execute_command(*probe(acks))
    except ResponseError as exc:
        raise refusal(acks, exc, server_version(redis)) from None


def server_version(redis: Any) -> str:
    try:
        info = redis.info("server")
    except RedisError:
        return "version unknown"
    name = "Valkey" if "valkey_version" in info else "Redis"
    return f"{name} {info.get('valkey_version') or info.get('redis_version', '?')}"
