"""`var/stack.json`: where a running `make run` stack is, for the `webhooks` command.

`make run` puts Redis on a free port and development credentials in `var/dev.env`; this
file says which port, and which settings the stack runs with, so that `webhooks dead list`
in another terminal of the same checkout talks to that stack without any setup. It holds
no secret: the credentials stay in `var/dev.env` (mode 600), which it names.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dotenv import dotenv_values

VAR = Path("var")
STACK_FILE = VAR / "stack.json"
DEV_ENV = VAR / "dev.env"


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
    """Which variable names the Redis to use (Sentinel's, or one server's), if any."""
    return next((n for n in ("REDIS_SENTINELS", "REDIS_URL") if configured(n, root)), None)


@dataclass(frozen=True, slots=True)
class StackFile:
    pid: int  # the `webhooks dev` process: the stack is up while it runs
    redis_url: str
    # Settings the stack's processes got that the environment did not set (not secrets).
    settings: dict[str, str] = field(default_factory=dict)
    receiver: str = ""
    dashboard: str = ""

    def write(self, root: Path = Path()) -> Path:
        path = root / STACK_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(self), indent=2) + "\n")
        temporary.chmod(0o600)
        temporary.replace(path)  # readers never see half a file
        return path

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


def credentials(root: Path) -> dict[str, str]:
    """The development credentials `make run` made (var/dev.env)."""
    path = root / DEV_ENV
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v}
