"""`make run`: a whole local stack from one command.

Starts Redis when REDIS_URL is not configured (append-only, under ./var/redis, on a free
port), creates development credentials in ./var/dev.env when none are configured, gives the
unset settings development values (short retry intervals, the example handlers), runs every
process of the Procfile through honcho, and says where everything is. The stack file
(var/stack.json) lets the `webhooks` command of this checkout find it.

Ctrl+C (or SIGTERM, SIGHUP) stops the Procfile's processes first and Redis last, and the
command exits 0. Redis and honcho run in sessions of their own, so the terminal's signal
reaches only this process, which stops them in that order (see `terminal.py` for make).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import FrameType

import click

from app.settings import ConfigError, Settings
from app.settings_checks import is_secret
from app.sources import PER_SOURCE_PREFIXES
from workers.dev.dev_cluster import DevCluster, cluster_banner, start_cluster
from workers.dev.devenv import (
    DevSettings,
    dev_credentials,
    dev_settings,
    echo_banner,
    retries_line,
)
from workers.dev.devkeys import dev_key_env, dev_keys, needs_key_server
from workers.dev.keyserver import start_key_server
from workers.dev.private import private_dir
from workers.dev.redis_server import RedisServer
from workers.dev.stackfile import (
    DEV_ENV,
    VAR,
    StackFile,
    configured,
    redis_configured,
    remove_stack_file,
    settings_env,
    write_stack_secrets,
)
from workers.dev.terminal import own_foreground

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# honcho gives its processes 5 s after SIGTERM before SIGKILL; this is its own deadline.
HONCHO_GRACE = 20


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _base_port() -> int:
    """honcho gives the Procfile's processes base, base+100, base+200: find a free trio."""
    for base in range(8000, 8100):
        if all(_port_free(base + step) for step in (0, 100, 200)):
            return base
    raise click.ClickException("no free ports between 8000 and 8300")


def _check(env: dict[str, str], dev_keyed: dict[str, str]) -> Settings:
    """The settings the processes will load, checked once here: one line, before anything
    starts, instead of the same error from three processes. `dev_keyed` (the dev key
    pairs' variables) wins over what is configured: WEBHOOK_FETCH_ALLOW gains the key
    server's origin."""
    fields = set(Settings.model_fields)
    given = {
        k.lower(): v
        for k, v in env.items()
        if k.lower() in fields and (k in dev_keyed or not configured(k))
    }
    # Per-source variables are otherwise read from the environment only.
    per_source = {k: v for k, v in env.items() if k.startswith(PER_SOURCE_PREFIXES)}
    try:
        return Settings.load(**given, per_source=per_source)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _processes_settings(
    env: dict[str, str], made: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """What the stack file keeps of the processes' environment: every variable their
    settings read, as (shown, secret); the secrets `make run` made are in var/dev.env."""
    fields = set(Settings.model_fields)
    read = {
        k: v
        for k, v in env.items()
        if k.lower() in fields or k.startswith((*PER_SOURCE_PREFIXES, "OTEL_"))
    }
    # A Redis URL may carry a password, and Sentinel's variables its credentials.
    hidden = {k: v for k, v in read.items() if is_secret(k) or k.startswith("REDIS_")}
    shown = {k: v for k, v in read.items() if k not in hidden}
    return shown, {k: v for k, v in hidden.items() if made.get(k) != v}


class Stop:
    """Remembers a stop request and passes it on to honcho once honcho runs."""

    def __init__(self) -> None:
        self.requested = False
        self.honcho: subprocess.Popen[bytes] | None = None

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        self.requested = True
        if self.honcho is not None and self.honcho.poll() is None:
            # SIGTERM whatever came in: honcho then stops each process the same way.
            self.honcho.send_signal(signal.SIGTERM)

    def wait(self) -> int:
        assert self.honcho is not None
        while True:
            try:
                return self.honcho.wait(HONCHO_GRACE if self.requested else None)
            except subprocess.TimeoutExpired:
                os.killpg(self.honcho.pid, signal.SIGKILL)


def run_stack(cluster: bool = False) -> None:
    stop = Stop()
    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    with own_foreground() as terminal:
        code = _run(stop, terminal, cluster)
    sys.exit(code)


def _run(stop: Stop, terminal: bool, cluster: bool = False) -> int:
    # .env under the environment, as the settings read them. honcho would put .env over the
    # environment (so `WEBHOOK_SOURCES=… make run` lost to a copied .env): it gets no file.
    env = settings_env()
    # The Procfile's commands (uvicorn, webhooks) live next to this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    private_dir(VAR)  # before anything is written there: the credentials, keys, Redis's data
    made = dev_credentials()
    env.update(made)
    dev = dev_settings(terminal=sys.stdout.isatty())
    env.update(dev.values)
    env.setdefault("HOST", "127.0.0.1")
    keys = dev_keys()
    key_server_url, stop_key_server = (
        start_key_server(keys) if needs_key_server(keys) else (None, lambda: None)
    )
    redis: RedisServer | None = None
    local_cluster: DevCluster | None = None
    try:
        dev_keyed = dev_key_env(keys, key_server_url)
        env.update(dev_keyed)
        if cluster:
            local_cluster = start_cluster(env, VAR / "cluster", redis_configured())
        settings = _check(env, dev_keyed)
        if redis_configured() is None and local_cluster is None:
            redis = RedisServer(VAR / "redis", detached=True).start()
            env["REDIS_URL"] = redis.url
        base = _base_port()
        web, dashboard = f"http://127.0.0.1:{base}", f"http://127.0.0.1:{base + 200}"
        shown, hidden = _processes_settings(env, made)
        StackFile(
            os.getpid(),
            redis.url if redis is not None else "",
            dev.values,
            web,
            dashboard,
            environment=shown,
            keyed=sorted(dev_keyed),
        ).write()
        write_stack_secrets(hidden)
        lines = _banner(redis, web, dashboard, settings, dev)
        if local_cluster is not None:
            lines = cluster_banner(local_cluster, lines, env["WEBHOOK_SHARDS"])
        echo_banner(lines)
        if stop.requested:
            return 0
        # honcho, with a manager that tells a requested stop from a failure (procs.py).
        honcho = [sys.executable, "-m", "workers.dev.procs", "start", "-f", "Procfile"]
        honcho += ["-p", str(base), "-e", os.devnull]
        if local_cluster is not None:
            honcho += ["web", "worker"]  # the dashboard does not run on a cluster yet
        stop.honcho = subprocess.Popen(honcho, env=env, start_new_session=True)  # noqa: S603
        code = stop.wait()
        return 0 if stop.requested else code
    finally:
        remove_stack_file()
        stop_key_server()
        if redis is not None:
            redis.stop()  # last: every process that used it has stopped
            click.echo("redis stopped; the stack is down")
        if local_cluster is not None:
            local_cluster.stop()
            click.echo("the local cluster stopped (its data with it); the stack is down")


def _banner(
    redis: RedisServer | None, web: str, dashboard: str, settings: Settings, dev: DevSettings
) -> list[str]:
    lines = []
    if redis is not None:
        lines.append(f"redis:     {redis.url} (append-only, data in {VAR / 'redis'})")
    else:  # said, or a REDIS_URL left in .env quietly points the stack at another Redis
        named = f"{redis_configured()} is set: make run started no Redis of its own"
        lines.append(f"redis:     {settings.redis_target.where} ({named})")
    names = list(settings.sources)
    width = max(len(name) for name in names)
    for n, (name, source) in enumerate(settings.sources.items()):
        label = "receiver:  " if n == 0 else "           "
        health = f"   (health: {web}/readyz)" if n == 0 else ""
        lines.append(f"{label}{web}/webhooks/{name:<{width}}  ({source.provider}){health}")
    lines += [
        f"dashboard: {dashboard}/   (login in {DEV_ENV} or your RQ_DASHBOARD_* variables)",
        f"events:    {dashboard}/events   (the same login)",
        retries_line(settings.retry_intervals, dev),
        "operate:   .venv/bin/webhooks dead list   (finds this stack by itself; Ctrl+C stops it)",
        f"send:      .venv/bin/webhooks send {names[0]}   (a signed test event, as "
        f"{settings.sources[names[0]].provider} sends it; webhooks sources lists them)",
    ]
    return lines
