"""Where each setting of `webhooks config check` came from, and its value as it may be shown.

The order is the settings' own: what the `make run` stack gave the processes (only for what
is not configured, see `target.py`), then the environment, then `.env`, then the default.
Secrets are never shown, only whether they are set; a URL's password is masked too, and a
query option named as a credential (`?api-key=`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from app.settings import Settings
from app.settings_checks import credential_spans, is_secret
from app.sources import (
    KEYLESS,
    LEGACY_SOURCE,
    PER_SOURCE_PREFIXES,
    ConfigError,
    env_suffix,
    split_secrets,
)
from workers.dev.stackfile import DEV_ENV, STACK_FILE, StackFile, credentials
from workers.ops.target import Target

MASK = "********"
NOT_SET = "(not set)"
# user:password@ in any scheme://, up to the last @ before the host (as redis-py and urlparse
# read it: a password may hold @), and a credential given as a query option (redis-py reads
# ?password= and, for a TLS key, ?ssl_password=; collectors take ?api-key=, signed URLs
# &sig=...): where their values are is `app.settings_checks.credential_spans`'s.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#]*)@")


class Origin(StrEnum):
    ENVIRONMENT = "environment"
    DOTENV = ".env"
    DEV_ENV = f"{DEV_ENV} (make run)"
    STACK = f"{STACK_FILE} (make run)"
    STACK_ENVIRONMENT = "make run's environment"
    DEV_KEYS = "make run's dev keys"
    DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class SettingLine:
    name: str
    value: str  # as it may be shown: secrets and URL passwords masked
    origin: Origin


def mask_url(text: str) -> str:
    """`redis://user:pw@host` -> `redis://user:********@host`; a lone user-info part may be
    a password (`redis://pw@host` is how some write it), so it is masked whole."""

    def userinfo(match: re.Match[str]) -> str:
        user, colon, _ = match["info"].partition(":")
        return match["scheme"] + (f"{user}:{MASK}" if colon else MASK) + "@"

    return _mask_options(_USERINFO.sub(userinfo, text))


def _mask_options(text: str) -> str:
    """Each credential option's value masked (`credential_spans`): a reader sees the option
    is there, not what it holds."""
    kept, at = [], 0
    for start, end in credential_spans(text):
        kept += [text[at:start], MASK]
        at = end
    return "".join(kept) + text[at:]


def _origin_in_stack(
    name: str,
    value: str,
    stack: StackFile | None,
    dev_env: Mapping[str, str],
    dotenv: Mapping[str, str],
) -> Origin:
    """Where a setting of the running stack came from: `make run`'s choices, its files, the
    `.env` it read, or what its command line (its environment) set."""
    if stack is None or name in stack.keyed:
        return Origin.DEV_KEYS
    if name in stack.settings or (name == "REDIS_URL" and stack.redis_url == value):
        return Origin.STACK
    if dev_env.get(name) == value:
        return Origin.DEV_ENV
    if dotenv.get(name) == value:
        return Origin.DOTENV
    if stack.environment:
        return Origin.STACK_ENVIRONMENT
    return Origin.DEV_KEYS  # an older stack file kept only its own choices


@dataclass(frozen=True, slots=True)
class Provenance:
    """Every place a value can come from, read once."""

    made: Mapping[str, Origin]  # variable -> which part of the stack gave it
    overrides: Mapping[str, str]
    environment: Mapping[str, str]
    dotenv: Mapping[str, str]

    @classmethod
    def read(cls, target: Target, root: Path = Path()) -> Provenance:
        overrides = {k.upper(): str(v) for k, v in target.overrides.items() if k != "per_source"}
        overrides.update(target.overrides.get("per_source", {}))
        env_file = root / ".env"
        dotenv = (
            {k: v for k, v in dotenv_values(env_file).items() if v is not None}
            if env_file.is_file()
            else {}
        )
        made: dict[str, Origin] = {}
        if target.stack_file is not None:
            stack = StackFile.read(target.stack_file)
            dev_env = credentials(target.stack_file.parent.parent)
            for name, value in overrides.items():
                made[name] = _origin_in_stack(name, value, stack, dev_env, dotenv)
        return cls(made, overrides, dict(os.environ), dotenv)

    def find(self, name: str, exact: bool = False) -> tuple[str, Origin] | None:
        """The value in force and its origin; pydantic's fields ignore the case of their
        environment variable, the per-source variables (`exact`) do not."""
        if name in self.overrides:
            return self.overrides[name], self.made.get(name, Origin.DEV_KEYS)
        for values, origin in (
            (self.environment, Origin.ENVIRONMENT),
            (self.dotenv, Origin.DOTENV),
        ):
            if name in values:
                return values[name], origin
            if not exact:
                for key, value in values.items():
                    if key.upper() == name:
                        return value, origin
        return None

    def otel_names(self) -> set[str]:
        """The OpenTelemetry variables set (`app/tracing.py`): listed only when set."""
        return {
            name
            for values in (self.environment, self.dotenv)
            for name in values
            if name.startswith("OTEL_")
        }

    def per_source_names(self) -> set[str]:
        return {
            name
            for values in (self.overrides, self.environment, self.dotenv)
            for name in values
            if name.startswith(PER_SOURCE_PREFIXES)
        }


def setting_lines(provenance: Provenance, sources: list[str]) -> list[SettingLine]:
    """Every setting (the fields, then the per-source variables, with each configured
    source's secret listed even when it is missing)."""
    lines = []
    for field_name, info in Settings.model_fields.items():
        if field_name in ("per_source", "otel"):
            continue
        name = field_name.upper()
        found = provenance.find(name)
        if found is None:
            default = info.get_default(call_default_factory=True)
            lines.append(SettingLine(name, _shown_default(name, default), Origin.DEFAULT))
        else:
            lines.append(SettingLine(name, _shown(name, found[0]), found[1]))
    wanted = provenance.per_source_names() | provenance.otel_names() | _secrets_of(sources)
    if provenance.find("WEBHOOK_SIGNING_SECRET") is not None:
        # The default source's secret given as WEBHOOK_SIGNING_SECRET: not missing.
        wanted -= {"WEBHOOK_SECRET_" + env_suffix(LEGACY_SOURCE)} - provenance.per_source_names()
    for name in sorted(wanted):
        found = provenance.find(name, exact=True)
        if found is None:
            lines.append(SettingLine(name, NOT_SET, Origin.DEFAULT))
        else:
            lines.append(SettingLine(name, _shown(name, found[0]), found[1]))
    return lines


def _secrets_of(sources: list[str]) -> set[str]:
    names = set()
    for entry in sources:
        name, _, provider = entry.partition(":")
        if (provider.strip() or name.strip()) not in KEYLESS:
            names.add("WEBHOOK_SECRET_" + env_suffix(name.strip()))
    return names


def _shown(name: str, value: str) -> str:
    if not value.strip():
        return NOT_SET
    if not is_secret(name):
        return mask_url(value)
    try:
        count = len(split_secrets(name, value))
    except ConfigError:
        count = 1  # malformed: the checks say how, never what
    return MASK if count <= 1 else f"{MASK} ({count} secrets)"


def _shown_default(name: str, default: Any) -> str:
    if default is None:
        return NOT_SET
    if isinstance(default, list):
        return ",".join(str(v) for v in default) or NOT_SET
    if isinstance(default, bool):
        return str(default).lower()
    return _shown(name, str(default))
