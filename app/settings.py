"""One `Settings` object for the receiver, the workers and the `webhooks` command.

Fixed variables are pydantic-settings fields. Per-source variables (`WEBHOOK_SECRET_<NAME>`,
`REPLAY_TOLERANCE_<NAME>`, `WEBHOOK_DEDUPE_TTL_<NAME>`) have names that depend on
`WEBHOOK_SOURCES`, so a custom settings source collects them into `per_source`; `sources`
then resolves each configured source, and a missing secret is a `ConfigError` naming the
variable. Nothing is read at import time: entry points call `Settings.load()`, tests pass
values in.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from dotenv import dotenv_values
from pydantic import Field, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

PROVIDERS = ("hmac", "stripe", "github", "shopify", "slack", "paddle", "standard")
PER_SOURCE_PREFIXES = ("WEBHOOK_SECRET_", "REPLAY_TOLERANCE_", "WEBHOOK_DEDUPE_TTL_")
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# The seed articles' single-secret variable belongs to the default source.
LEGACY_SOURCE = "inbound"


class ConfigError(Exception):
    """The configuration cannot run; the message names the variable to fix."""


@dataclass(frozen=True, slots=True)
class SourceConfig:
    name: str
    provider: str
    secrets: tuple[SecretStr, ...]
    tolerance: int
    dedupe_ttl: int


def env_suffix(source: str) -> str:
    """`billing-eu` -> `BILLING_EU`, the suffix of that source's variables."""
    return source.upper().replace("-", "_")


class _PerSourceVariables(PydanticBaseSettingsSource):
    """Gathers the per-source variables from the environment and the `.env` file."""

    def __init__(self, settings_cls: type[BaseSettings], env_file: Path | None) -> None:
        super().__init__(settings_cls)
        self.env_file = env_file

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, str] = {}
        if self.env_file is not None and self.env_file.is_file():
            found.update({k: v for k, v in dotenv_values(self.env_file).items() if v is not None})
        found.update(os.environ)
        picked = {k: v for k, v in found.items() if k.startswith(PER_SOURCE_PREFIXES)}
        return {"per_source": picked} if picked else {}


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", frozen=True)

    redis_url: str = "redis://localhost:6379/0"
    webhook_sources: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["inbound:hmac"]
    )
    webhook_signing_secret: SecretStr | None = None
    webhook_dedupe_ttl: int = Field(86_400, ge=1)
    replay_tolerance: int = Field(300, ge=1)
    webhook_max_body_bytes: int = Field(1_048_576, ge=1)
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
    webhook_maintenance_interval: int = Field(30, ge=1)
    # fork: a work-horse process per job (isolation); simple: handlers run in the worker.
    webhook_worker_mode: Literal["fork", "simple"] = "fork"
    # Refuse to start when Redis could lose acknowledged events (AOF off, fsync not always).
    webhook_require_durable_redis: bool = False
    # Seconds the event ledger (and the entity versions of the version guard) are kept.
    webhook_ledger_ttl: int = Field(30 * 86_400, ge=60)
    # "log-only" still enqueues what would be a duplicate (marked, logged, counted).
    webhook_dedupe_mode: Literal["enforce", "log-only"] = "enforce"
    # Enables POST /webhooks/{source}/replay for events whose signature no longer matches.
    webhook_replay_token: SecretStr | None = None
    stripe_api_key: SecretStr | None = None
    stripe_api_base: str = "https://api.stripe.com"
    github_token: SecretStr | None = None
    github_api_base: str = "https://api.github.com"
    rq_dashboard_username: str | None = None
    rq_dashboard_password: SecretStr | None = None
    per_source: dict[str, str] = Field(default_factory=dict, repr=False)

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
        per_source = _PerSourceVariables(
            settings_cls, Path(str(env_file)) if isinstance(env_file, str | Path) else None
        )
        return init_settings, env_settings, dotenv_settings, per_source, file_secret_settings

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Read the environment and fail fast, naming the variable, when it cannot run."""
        settings = cls(**overrides)
        settings.sources  # noqa: B018 - resolving is the validation
        return settings

    _csv = field_validator("webhook_sources", "webhook_handlers", mode="before")(_split_csv)

    @field_validator("webhook_retry_intervals", mode="before")
    @classmethod
    def _intervals(cls, value: object) -> object:
        parts = _split_csv(value)
        if isinstance(parts, list) and not parts:
            raise ValueError("WEBHOOK_RETRY_INTERVALS needs at least one value")
        return parts

    @field_validator("webhook_retry_intervals")
    @classmethod
    def _non_negative(cls, value: list[int]) -> list[int]:
        if any(v < 0 for v in value):
            raise ValueError("WEBHOOK_RETRY_INTERVALS must be seconds >= 0")
        return value

    @property
    def retry_intervals(self) -> list[int]:
        """One interval per retry; the last configured value repeats."""
        given = self.webhook_retry_intervals
        return [given[min(i, len(given) - 1)] for i in range(self.webhook_max_retries)]

    @cached_property
    def sources(self) -> dict[str, SourceConfig]:
        resolved: dict[str, SourceConfig] = {}
        if not self.webhook_sources:
            raise ConfigError("WEBHOOK_SOURCES is empty: configure at least one source")
        for entry in self.webhook_sources:
            name, _, provider = entry.partition(":")
            name, provider = name.strip(), (provider.strip() or name.strip())
            if not _SOURCE_NAME.match(name):
                raise ConfigError(
                    f"WEBHOOK_SOURCES: {name!r} is not a valid source name "
                    "(lowercase letters, digits, '-' and '_', at most 32 characters)"
                )
            if provider not in PROVIDERS:
                raise ConfigError(
                    f"WEBHOOK_SOURCES: source {name!r} names unknown provider {provider!r}; "
                    f"known providers: {', '.join(PROVIDERS)}"
                )
            if name in resolved:
                raise ConfigError(f"WEBHOOK_SOURCES: source {name!r} is listed twice")
            resolved[name] = SourceConfig(
                name=name,
                provider=provider,
                secrets=self._secrets_of(name),
                tolerance=self._int_of("REPLAY_TOLERANCE_", name, self.replay_tolerance),
                dedupe_ttl=self._int_of("WEBHOOK_DEDUPE_TTL_", name, self.webhook_dedupe_ttl),
            )
        return resolved

    def _secrets_of(self, source: str) -> tuple[SecretStr, ...]:
        variable = "WEBHOOK_SECRET_" + env_suffix(source)
        raw = [self.per_source.get(variable, "")]
        if source == LEGACY_SOURCE and self.webhook_signing_secret is not None:
            raw.append(self.webhook_signing_secret.get_secret_value())
        secrets = tuple(
            SecretStr(part.strip()) for value in raw for part in value.split(",") if part.strip()
        )
        if not secrets:
            hint = " (or WEBHOOK_SIGNING_SECRET)" if source == LEGACY_SOURCE else ""
            raise ConfigError(
                f"{variable}{hint} is not set: source {source!r} cannot verify signatures "
                "without a secret"
            )
        return secrets

    def _int_of(self, prefix: str, source: str, default: int) -> int:
        variable = prefix + env_suffix(source)
        value = self.per_source.get(variable)
        if value is None or not value.strip():
            return default
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{variable} must be a whole number of seconds") from None
        if number < 1:
            raise ConfigError(f"{variable} must be at least 1 second")
        return number
