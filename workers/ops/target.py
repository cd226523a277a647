"""Which Redis the `webhooks` command talks to, and how to say so.

REDIS_URL (environment or `.env`) wins. Without it, a `make run` stack of this checkout that
is up is used, with the settings and development credentials it runs with. Otherwise the
default (`localhost:6379`), and an error that says how to point the command elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.settings import Settings
from app.sources import PER_SOURCE_PREFIXES
from workers.dev.devkeys import dev_key_env, dev_keys, key_server_url
from workers.dev.stackfile import STACK_FILE, configured, credentials, find_stack, redis_configured

START_ONE = (
    "REDIS_URL is not set and no `make run` stack of this checkout is up: start one with "
    "`make run`, or set REDIS_URL=redis://HOST:PORT/DB (environment or .env)"
)


@dataclass(frozen=True, slots=True)
class Target:
    """Settings to apply on top of the environment, and where the Redis came from."""

    origin: str  # "REDIS_URL", "REDIS_SENTINELS", "stack" or "default"
    overrides: dict[str, Any] = field(default_factory=dict)
    stack_file: Path | None = None
    stale_file: Path | None = None

    def describe(self) -> str:
        if self.origin == "stack":
            return f"the `make run` stack of this checkout, {_relative(self.stack_file)}"
        if self.origin in ("REDIS_URL", "REDIS_SENTINELS"):
            return self.origin
        return "the default: REDIS_URL is not set"

    def hint(self) -> str:
        """What to do when that Redis does not answer, or the settings do not load."""
        if self.origin == "stack":
            return "is `make run` still running?"
        if self.origin in ("REDIS_URL", "REDIS_SENTINELS"):
            return f"check {self.origin}"
        stale = (
            f" ({_relative(self.stale_file)} is left from a stack that no longer runs)"
            if self.stale_file
            else ""
        )
        return START_ONE + stale


def _relative(path: Path | None) -> str:
    """A path as the operator would type it from where they are."""
    return os.path.relpath(path) if path is not None else ""


def resolve_target(start: Path | None = None) -> Target:
    named = redis_configured(start or Path())
    if named is not None:
        return Target(named)
    found = find_stack(start)
    if found is None or found.stack is None:
        stale = found.root / STACK_FILE if found is not None else None
        return Target("default", stale_file=stale)
    stack = found.stack
    here = start or Path()
    fields = set(Settings.model_fields)
    # The dev key pairs' variables (a Discord source's public key, Plaid's key server...),
    # as the stack's processes got them; WEBHOOK_FETCH_ALLOW among them is always theirs.
    try:
        dev_keyed = dev_key_env(
            dev_keys(found.root, create=False), key_server_url(found.root), found.root
        )
    except ValueError:  # the key server's file is gone: those sources will say so
        dev_keyed = {}
    given = {
        **stack.settings,
        **credentials(found.root),
        **dev_keyed,
        "REDIS_URL": stack.redis_url,
    }
    chosen = {
        name: value
        for name, value in given.items()
        if name in dev_keyed or not configured(name, here)
    }
    overrides: dict[str, Any] = {n.lower(): v for n, v in chosen.items() if n.lower() in fields}
    # Per-source variables (every source's dev secret) are otherwise read from the
    # environment alone.
    per_source = {n: v for n, v in chosen.items() if n.startswith(PER_SOURCE_PREFIXES)}
    if per_source:
        overrides["per_source"] = per_source
    return Target("stack", overrides, stack_file=found.root / STACK_FILE)
