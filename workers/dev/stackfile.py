"""`var/stack.json`: where a running `make run` stack is, for the `webhooks` command.

`make run` puts Redis on a free port and development credentials in `var/dev.env`; this
file says which port, and every setting the stack's processes run with, wherever it came
from (the command line, the environment, `.env` or `make run` itself), so that `webhooks
send` or `webhooks dead list` in another terminal of the same checkout, with nothing
exported, sees the stack as its processes do. It holds no secret: the secrets the processes
got from the command line or `.env` are in `var/stack.env` beside it (removed with it when
the stack stops), `make run`'s own in `var/dev.env`. Both files are 600 from their creation,
`var/` 700 (`private.py`).
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dotenv import dotenv_values

from workers.dev.private import write_private

VAR = Path("var")
STACK_FILE = VAR / "stack.json"
DEV_ENV = VAR / "dev.env"
STACK_ENV = VAR / "stack.env"


def _dotenv(root: Path) -> dict[str, str]:
    env_file = root / ".env"
    values = dotenv_values(env_file) if env_file.is_file() else {}
    return {k: v for k, v in values.items() if v is not None}


def settings_env(root: Path = Path()) -> dict[str, str]:
    """The variables as the settings read them: `.env`, under the environment."""
    return {**_dotenv(root), **os.environ}


def configured_value(name: str, root: Path = Path()) -> str:
    """A variable as the settings read it: the environment, else `.env` ("" when unset)."""
    return os.environ.get(name) or _dotenv(root).get(name) or ""


def configured(name: str, root: Path = Path()) -> bool:
    """Set in the environment, or in the `.env` file the settings read."""
    return bool(configured_value(name, root))


def checkout_root(start: Path | None = None) -> Path | None:
    """The checkout `start` is in: the nearest directory up holding the Procfile."""
    here = (start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / "Procfile").is_file()), None)


def redis_configured(root: Path = Path()) -> str | None:
    """Which variable names the Redis to use (a cluster's, Sentinel's, or one server's)."""
    return next((n for n in REDIS_VARIABLES if configured(n, root)), None)


# The variables that say where Redis is, the first one set winning.
REDIS_VARIABLES = ("REDIS_CLUSTER_NODES", "REDIS_SENTINELS", "REDIS_URL")


@dataclass(frozen=True, slots=True)
class StackFile:
    pid: int  # the `webhooks dev` process: the stack is up while it runs
    redis_url: str  # the Redis `make run` started; "" when one was configured
    # The settings `make run` gave its processes because nothing configured them.
    settings: dict[str, str] = field(default_factory=dict)
    receiver: str = ""
    dashboard: str = ""
    # Every setting the processes got, wherever from, but the secrets (those are in
    # STACK_ENV), and the names of those the development key pairs gave (devkeys.py).
    environment: dict[str, str] = field(default_factory=dict)
    keyed: list[str] = field(default_factory=list)

    def write(self, root: Path = Path()) -> Path:
        # 600 from its creation, and replaced in one step: readers never see half a file.
        return write_private(root / STACK_FILE, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> StackFile | None:
        try:
            data = json.loads(path.read_text())
            return cls(
                pid=int(data["pid"]),
                redis_url=str(data["redis_url"]),
                settings={str(k): str(v) for k, v in dict(data.get("settings", {})).items()},
                receiver=str(data.get("receiver", "")),
                dashboard=str(data.get("dashboard", "")),
                environment={str(k): str(v) for k, v in dict(data.get("environment", {})).items()},
                keyed=[str(n) for n in list(data.get("keyed", []))],
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def alive(self) -> bool:
        """Its `webhooks dev` process still runs (a file left by a killed stack does not)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # someone else's process: it exists
        try:  # Linux: make sure the pid was not reused by something else since
            command = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return True  # no /proc here (macOS): the pid alone has to do
        # Empty while a process is being set up or torn down: nothing to tell from it.
        return not command or b"webhooks" in command


@dataclass(frozen=True, slots=True)
class Found:
    """The stack file of the checkout the command runs in, if any."""

    root: Path
    stack: StackFile | None
    stale: bool  # a file is there, but its stack is no longer running


def find_stack(start: Path | None = None) -> Found | None:
    """The nearest `var/stack.json` from `start` up to the checkout's root (the directory
    holding the Procfile), or None when there is none."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        path = directory / STACK_FILE
        if path.is_file():
            stack = StackFile.read(path)
            if stack is not None and stack.alive():
                return Found(directory, stack, stale=False)
            return Found(directory, None, stale=True)
        if (directory / "Procfile").is_file():
            return None
    return None


def remove_stack_file(root: Path = Path()) -> None:
    (root / STACK_FILE).unlink(missing_ok=True)
    (root / STACK_ENV).unlink(missing_ok=True)


def write_stack_secrets(values: dict[str, str], root: Path = Path()) -> None:
    """The secrets the stack's processes run with, but those `make run` made (var/dev.env):
    readable by the checkout's owner only, never in a half-written state."""
    text = "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())
    write_private(root / STACK_ENV, text)


def stack_secrets(root: Path) -> dict[str, str]:
    """What `write_stack_secrets` kept for the running stack."""
    path = root / STACK_ENV
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def credentials(root: Path) -> dict[str, str]:
    """The development credentials `make run` made (var/dev.env)."""
    path = root / DEV_ENV
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v}
