"""Which Redis the `webhooks` command talks to, and how to say so.

REDIS_URL (or REDIS_SENTINELS) exported in the command's own environment wins. Without it,
a `make run` stack of this checkout that is up is used, with every setting its processes run
with (from `make run`'s command line, its environment, `.env` or `make run` itself: the
stack file keeps them), under what the command's own environment sets. Then REDIS_URL in
`.env`. A checkout whose
stack is down (its stack file left by a killed stack, or `var/redis` left by a clean stop)
gets no Redis at all: the default `localhost:6379` may be another project's Redis, whose
data must never read as this stack's. Otherwise (no stack ever ran here) the default, and an
error that says how to point the command elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.settings import Settings
from app.sources import PER_SOURCE_PREFIXES
from workers.dev.devkeys import dev_key_env, dev_keys, key_server_url
from workers.dev.stackfile import (
    REDIS_VARIABLES,
    STACK_FILE,
    VAR,
    StackFile,
    checkout_root,
    configured,
    credentials,
    find_stack,
    redis_configured,
    stack_secrets,
)

START_ONE = (
    "REDIS_URL is not set and no `make run` stack of this checkout is up: start one with "
    "`make run`, or set REDIS_URL=redis://HOST:PORT/DB (environment or .env)"
)


@dataclass(frozen=True, slots=True)
class Target:
    """Settings to apply on top of the environment, and where the Redis came from."""

    origin: str  # one of REDIS_VARIABLES, "stack", "stopped" or "default"
    overrides: dict[str, Any] = field(default_factory=dict)
    stack_file: Path | None = None
    stale_file: Path | None = None  # stopped: the stack file a killed stack left
    data_dir: Path | None = None  # stopped: the data a cleanly stopped stack left

    def describe(self) -> str:
        if self.origin == "stack":
            return f"the `make run` stack of this checkout, {_relative(self.stack_file)}"
        if self.origin in REDIS_VARIABLES:
            return self.origin
        if self.origin == "stopped":
            return "none: the `make run` stack of this checkout is not running"
        return "the default: REDIS_URL is not set"

    @property
    def down(self) -> bool:
        """This checkout has a stack and it is not running: no Redis may be used."""
        return self.origin == "stopped"

    def hint(self) -> str:
        """What to do when that Redis does not answer, or the settings do not load."""
        if self.origin == "stack":
            return (
                "is `make run` still running? Start it with `make run`, or set "
                "REDIS_URL=redis://HOST:PORT/DB to use another Redis"
            )
        if self.origin in REDIS_VARIABLES:
            return f"check {self.origin}"
        if self.origin == "stopped":
            return STOPPED.format(why=self._why_stopped())
        return START_ONE

    def _why_stopped(self) -> str:
        if self.stale_file is not None:
            return f"{_relative(self.stale_file)} is left from a stack that no longer runs"
        return f"its data is in {_relative(self.data_dir)}, and no var/stack.json says it runs"


STOPPED = (
    "the `make run` stack of this checkout is not running ({why}), and REDIS_URL is not set: "
    "start the stack with `make run`, or set REDIS_URL=redis://HOST:PORT/DB (environment or "
    ".env) to use another Redis"
)


def _relative(path: Path | None) -> str:
    """A path as the operator would type it from where they are."""
    return os.path.relpath(path) if path is not None else ""


def _stopped_here(start: Path | None) -> Path | None:
    """`var/redis` of the checkout `start` is in, when a stack ran here and stopped cleanly
    (it removes its stack file, not its data)."""
    root = checkout_root(start)
    data = root / VAR / "redis" if root is not None else None
    return data if data is not None and data.is_dir() else None


def resolve_target(start: Path | None = None) -> Target:
    here = start or Path()
    exported = next((n for n in REDIS_VARIABLES if os.environ.get(n)), None)
    if exported is not None:
        return Target(exported)
    found = find_stack(start)
    if found is not None and found.stack is not None:
        overrides = _running_stack(found.root, found.stack)
        return Target("stack", overrides, stack_file=found.root / STACK_FILE)
    named = redis_configured(here)
    if named is not None:
        return Target(named)
    # Its credentials still load the settings, so the error is about the stack, not a secret.
    if found is not None:  # a stack file whose `webhooks dev` no longer runs
        root = found.root
        overrides = _stack_overrides(root, StackFile.read(root / STACK_FILE), here)
        return Target("stopped", overrides, stale_file=root / STACK_FILE)
    data = _stopped_here(start)
    if data is not None:
        root = data.parent.parent
        overrides = _stack_overrides(root, None, here)
        return Target("stopped", overrides, data_dir=data)
    return Target("default")


def _running_stack(root: Path, stack: StackFile) -> dict[str, Any]:
    """The settings the running stack's processes have, but what this command's own
    environment sets: `.env` does not win over them, as the processes read it when they
    started (and under what `make run`'s command line set)."""
    if not stack.environment:  # a stack file of an older `make run`
        return _stack_overrides(root, stack, Path(), stack.redis_url)
    given = {
        **credentials(root),
        **stack.environment,
        **stack_secrets(root),
        **({"REDIS_URL": stack.redis_url} if stack.redis_url else {}),
    }
    return _as_overrides({k: v for k, v in given.items() if k not in os.environ})


def _as_overrides(chosen: dict[str, str]) -> dict[str, Any]:
    fields = set(Settings.model_fields)
    overrides: dict[str, Any] = {n.lower(): v for n, v in chosen.items() if n.lower() in fields}
    # Per-source variables (every source's dev secret) are otherwise read from the
    # environment alone.
    per_source = {n: v for n, v in chosen.items() if n.startswith(PER_SOURCE_PREFIXES)}
    if per_source:
        overrides["per_source"] = per_source
    return overrides


def _stack_overrides(
    root: Path, stack: StackFile | None, here: Path, redis_url: str | None = None
) -> dict[str, Any]:
    """The settings the stack's processes ran with (its Redis, when it runs), where the
    environment and `.env` do not set them."""
    # The dev key pairs' variables (a Discord source's public key, Plaid's key server...),
    # as the stack's processes got them; WEBHOOK_FETCH_ALLOW among them is always theirs.
    try:
        dev_keyed = dev_key_env(dev_keys(root, create=False), key_server_url(root), root)
    except ValueError:  # the key server's file is gone: those sources will say so
        dev_keyed = {}
    given = {
        **(stack.settings if stack is not None else {}),
        **credentials(root),
        **dev_keyed,
        **({"REDIS_URL": redis_url} if redis_url is not None else {}),
    }
    chosen = {
        name: value
        for name, value in given.items()
        if name in dev_keyed or not configured(name, here)
    }
    return _as_overrides(chosen)
