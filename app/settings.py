"""One `Settings` object for the receiver, the workers and the `webhooks` command.

Fixed variables are pydantic-settings fields. Per-source variables (`WEBHOOK_SECRET_<NAME>`,
`REPLAY_TOLERANCE_<NAME>`, `WEBHOOK_DEDUPE_TTL_<NAME>`) have names that depend on
`WEBHOOK_SOURCES`, so a custom settings source collects them into `per_source`; `sources`
then resolves each configured source, and a missing secret is a `ConfigError` naming the
variable. Nothing is read at import time: entry points call `Settings.load()`, tests pass
values in.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from app.cluster_target import ClusterTarget, parse_cluster_nodes
from app.keys import Keys, rq_prefix
from app.providers import PROVIDERS
from app.redis_target import RedisTarget, parse_target
from app.settings_checks import check_loaded, one_line
from app.shards import Shards
from app.sources import (
    ConfigError,
    Defaults,
    PerSourceVariables,
    SourceConfig,
    env_suffix,
    resolve_sources,
)

__all__ = ["PROVIDERS", "ConfigError", "Settings", "SourceConfig", "env_suffix"]

DEFAULT_FETCH_ALLOW = (
    "https://sns.{region}.amazonaws.com",
    "https://sns.{region}.amazonaws.com.cn",
    "https://production.plaid.com",
    "https://sandbox.plaid.com",
)


# What sentry-sdk reads as a DSN: a key, a host, an optional path, a numeric project id.
_SENTRY_DSN = re.compile(r"https?://[^@/?#\s]+@[^/?#\s]+(/[^?#\s]*)?/\d+")


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", frozen=True)
    # On a cluster, the shard a worker process serves; not a variable.
    _shard: int | None = PrivateAttr(None)

    # Out of repr: it may hold a password. How it is read: `app/redis_target.py`.
    redis_url: str = Field("redis://localhost:6379/0", repr=False)
    # Sentinel: the primary is asked of these (host:port,...); REDIS_URL then gives the
    # scheme, credentials, database and TLS options of the data nodes.
    redis_sentinels: Annotated[list[str], NoDecode] = Field(default_factory=list)
    redis_sentinel_master: str = Field("mymaster", pattern=r"^[A-Za-z0-9_.:-]+$")
    redis_sentinel_username: str | None = None
    redis_sentinel_password: SecretStr | None = None
    # A Redis or Valkey Cluster's seed nodes (`app/cluster_target.py`): every process then
    # uses the cluster, and REDIS_URL is not. Out of repr: it may hold a password.
    redis_cluster_nodes: str | None = Field(None, repr=False)
    # The cluster's logical shards (`app/shards.py`), fixed for a deployment.
    webhook_shards: int = Field(16, ge=1, le=1024)
    webhook_sources: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["inbound:hmac"]
    )
    webhook_signing_secret: SecretStr | None = None
    webhook_dedupe_ttl: int = Field(86_400, ge=1)
    replay_tolerance: int = Field(300, ge=1)
    webhook_max_body_bytes: int = Field(1_048_576, ge=1)
    # What one connection may cost before its request reaches the app (app/http_guard.py).
    # The head (request line and headers): a larger one is refused with 431 as it arrives
    # (16 KiB is h11's and Node's limit; 100 headers Apache's).
    webhook_max_header_bytes: int = Field(16_384, ge=1024, le=1_048_576)
    webhook_max_headers: int = Field(100, ge=10, le=10_000)
    # Seconds from a connection's opening (or a next request's first byte) to its head's
    # end. Providers send a head in one packet; a slower one is a slowloris.
    webhook_header_timeout: float = Field(5.0, gt=0, le=300)
    # Every this many seconds, a body that has not ended must have brought at least
    # WEBHOOK_BODY_MIN_RATE bytes a second since the last check, or the connection is cut:
    # a steady upload is never cut, a trickle holds a connection for seconds, not forever.
    webhook_body_timeout: float = Field(5.0, gt=0, le=300)
    webhook_body_min_rate: int = Field(16_384, ge=1)
    # Connections per process, each a file descriptor: keep it well under `ulimit -n`.
    webhook_max_connections: int = Field(500, ge=1, le=1_000_000)
    webhook_queue: str = Field("webhooks", pattern=r"^[A-Za-z0-9_.:-]+$")
    webhook_key_prefix: str = Field("webhook", pattern=r"^[A-Za-z0-9_.:-]+$")
    webhook_handlers: Annotated[list[str], NoDecode] = Field(default_factory=list)
    webhook_max_retries: int = Field(5, ge=0, le=100)
    webhook_retry_intervals: Annotated[list[int], NoDecode] = Field(
        default_factory=lambda: [10, 30, 120, 600, 1800]
    )
    # Seconds a handler may run before the attempt is killed and counted as failed.
    webhook_job_timeout: int = Field(300, ge=1)
    # How often a worker looks for jobs orphaned by a dead worker; RQ's own default is 600 s.
    webhook_maintenance_interval: int = Field(10, ge=1)
    # fork: handlers run in a child process per batch (isolation); simple: in the worker.
    webhook_worker_mode: Literal["fork", "simple"] = "fork"
    # Jobs a worker takes per round trip: fewer, larger Redis writes (each one fsynced).
    webhook_batch_size: int = Field(50, ge=1, le=1000)
    # Refuse to start when Redis could lose acknowledged events (AOF off, fsync not always).
    webhook_require_durable_redis: bool = False
    # Seconds the event ledger (and the entity versions of the version guard) are kept.
    webhook_ledger_ttl: int = Field(30 * 86_400, ge=60)
    # "log-only" still enqueues what would be a duplicate (marked, logged, counted).
    webhook_dedupe_mode: Literal["enforce", "log-only"] = "enforce"
    # Seconds from a request's arrival to its answer: when Redis has not confirmed the
    # claim by then, the answer is 503 (Slack gives up at 3 s, GitHub at 10 s).
    webhook_ack_timeout: float = Field(2.0, gt=0, le=30)
    # Replicas that must hold a claim before its 200 (WAIT, or WAITAOF: in their AOF too).
    # 0: the primary alone, as with one Redis. See docs/deployment.md.
    webhook_replica_acks: int = Field(0, ge=0, le=10)
    webhook_replica_ack_timeout: float = Field(0.5, gt=0, le=10)
    webhook_replica_ack_mode: Literal["wait", "waitaof"] = "wait"
    # Enables POST /webhooks/{source}/replay for events whose signature no longer matches.
    webhook_replay_token: SecretStr | None = None
    stripe_api_key: SecretStr | None = None
    stripe_api_base: str = "https://api.stripe.com"
    github_token: SecretStr | None = None
    github_api_base: str = "https://api.github.com"
    # How log lines look: json (one object per line), text (for a person at a terminal), or
    # auto: text when stderr is a terminal, json otherwise (app/logs.py reads it).
    webhook_log_format: Literal["auto", "json", "text"] = "auto"
    rq_dashboard_username: str | None = None
    rq_dashboard_password: SecretStr | None = None
    # The public base URL (scheme://host[/prefix]) providers call, when a proxy sits in
    # front: Twilio, Square and HubSpot sign the URL they called, not the one we see.
    webhook_public_url: str | None = Field(None, pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$")
    # Where keys and certificates may be fetched from (AWS SNS, Plaid): `scheme://host`
    # patterns; `*` is one DNS label (or any port), `{region}` an AWS region.
    webhook_fetch_allow: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_FETCH_ALLOW)
    )
    # Seconds one key or certificate fetch may take before the request gets a 503.
    webhook_fetch_timeout: float = Field(5.0, gt=0, le=30)
    per_source: dict[str, str] = Field(default_factory=dict, repr=False)
    # The OTEL_* variables (environment over `.env`); OTEL_EXPORTER_OTLP_HEADERS may hold
    # a token, hence out of repr. What they switch on: `app/tracing.py`.
    otel: dict[str, str] = Field(default_factory=dict, repr=False)
    # Handler errors in Sentry (`workers/runtime/sentry_reports.py`), off when unset. The
    # DSN holds the project's key: a secret, checked for its form without the SDK.
    sentry_dsn: SecretStr | None = None
    # attempt: an event per failed handler attempt (retries included); final: only when
    # the handler will not run again for the event (dead letter, or PermanentError).
    webhook_sentry_events: Literal["attempt", "final"] = "final"
    # Sends the payload and the handler's local variables; secrets and headers never.
    webhook_sentry_send_payload: bool = False
    # Sentry's own rules (it drops what breaks them): an environment has no whitespace nor
    # slash, up to 64 characters; a release no line break, tab nor slash, up to 200.
    sentry_environment: str | None = Field(None, pattern=r"^[^\s/]{1,64}$")
    sentry_release: str | None = Field(None, pattern=r"^[^\t\n\r/\\]{1,200}$")
    # Seconds a source may go without an accepted event before the silence alert fires
    # (WEBHOOK_EXPECTED_SILENCE_<NAME> per source; 0: never). Served as a metric, so the
    # rule reads each source's own (deploy/prometheus/webhook-alerts.yml).
    webhook_expected_silence: int = Field(21_600, ge=0)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The dotenv source knows the file in force, including a `_env_file=` override.
        env_file = getattr(dotenv_settings, "env_file", None)
        per_source = PerSourceVariables(
            settings_cls, Path(str(env_file)) if isinstance(env_file, str | Path) else None
        )
        return init_settings, env_settings, dotenv_settings, per_source, file_secret_settings

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Read the environment and fail fast, naming the variable, when it cannot run."""
        try:
            settings = cls(**overrides)
        except ValidationError as exc:
            raise ConfigError(one_line(exc)) from None
        check_loaded(settings)
        return settings

    @field_validator(
        "webhook_replay_token",
        "webhook_signing_secret",
        "rq_dashboard_password",
        "stripe_api_key",
        "github_token",
        "redis_sentinel_password",
        "redis_cluster_nodes",
        "sentry_dsn",
        "sentry_environment",
        "sentry_release",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        # `WEBHOOK_REPLAY_TOKEN=` (an uncommented example line) means "off", never "empty
        # token": an empty token would match a request that sends none.
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    _csv = field_validator(
        "webhook_sources",
        "webhook_handlers",
        "webhook_fetch_allow",
        "redis_sentinels",
        "webhook_retry_intervals",
        mode="before",
    )(_split_csv)

    @field_validator("webhook_public_url", mode="before")
    @classmethod
    def _blank_url_is_unset(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().rstrip("/") or None
        return value

    @field_validator("sentry_dsn")
    @classmethod
    def _dsn_form(cls, value: SecretStr | None) -> SecretStr | None:
        # Never quoted back: the key is the DSN's user part.
        if value is not None and not _SENTRY_DSN.fullmatch(value.get_secret_value()):
            raise ValueError(
                "must read http(s)://<key>@<host>[/<path>]/<project id> (the project's "
                "Client Keys page shows it)"
            )
        return value

    @field_validator("webhook_retry_intervals")
    @classmethod
    def _non_negative(cls, value: list[int]) -> list[int]:
        if not value:
            raise ValueError("WEBHOOK_RETRY_INTERVALS needs at least one value")
        if any(v < 0 for v in value):
            raise ValueError("WEBHOOK_RETRY_INTERVALS must be seconds >= 0")
        return value

    @property
    def retry_intervals(self) -> list[int]:
        """One interval per retry; the last configured value repeats."""
        given = self.webhook_retry_intervals
        return [given[min(i, len(given) - 1)] for i in range(self.webhook_max_retries)]

    @property
    def redis_target(self) -> RedisTarget:
        """Where Redis is (one server, or Sentinel's primary), read the same way for every
        process. Not cached: `model_copy(update={"redis_url": ...})` must not keep the old."""
        password = self.redis_sentinel_password
        return parse_target(
            self.redis_url,
            self.redis_sentinels,
            self.redis_sentinel_master,
            self.redis_sentinel_username,
            password.get_secret_value() if password else None,
        )

    @property
    def shard(self) -> int | None:
        """The shard this worker process serves (`shard_workers.for_shard`)."""
        return self._shard

    @property
    def keys(self) -> Keys:
        """This process's key names, ours and RQ's: on a cluster, its shard's (`for_shard`)."""
        tag = None if self._shard is None else Shards(self.webhook_shards).tag(self._shard)
        return Keys(self.webhook_key_prefix, self.webhook_queue, rq_prefix(tag))

    @property
    def cluster_target(self) -> ClusterTarget | None:
        """Where the cluster is, when REDIS_CLUSTER_NODES is set."""
        nodes = self.redis_cluster_nodes
        return parse_cluster_nodes(nodes) if nodes else None

    @cached_property
    def sources(self) -> dict[str, SourceConfig]:
        defaults = Defaults(
            self.replay_tolerance,
            self.webhook_dedupe_ttl,
            self.webhook_signing_secret,
            self.webhook_expected_silence,
        )
        return resolve_sources(self.webhook_sources, self.per_source, defaults, PROVIDERS)
