"""`make run`: a whole local stack from one command.

Starts Redis when REDIS_URL is not configured (append-only, under ./var/redis, on a free
port), creates development credentials in ./var/dev.env when none are configured, then runs
every process of the Procfile through honcho and prints where to find them.
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
from dotenv import dotenv_values

from workers.dev.redis_server import RedisServer

VAR = Path("var")
DEV_ENV = VAR / "dev.env"


def _configured(name: str) -> bool:
    if os.environ.get(name):
        return True
    return bool(Path(".env").is_file() and dotenv_values(".env").get(name))


def _dev_credentials() -> dict[str, str]:
    """Secrets for a local run, made once and kept in var/dev.env (never printed)."""
    wanted: dict[str, Callable[[], str]] = {
        "WEBHOOK_SIGNING_SECRET": lambda: secrets.token_hex(24),
        "RQ_DASHBOARD_USERNAME": lambda: "admin",
        "RQ_DASHBOARD_PASSWORD": lambda: secrets.token_urlsafe(18),
    }
    stored = {k: v for k, v in dotenv_values(DEV_ENV).items() if v} if DEV_ENV.is_file() else {}
    made = {}
    for name, make in wanted.items():
        if _configured(name) or (
            name == "WEBHOOK_SIGNING_SECRET" and _configured("WEBHOOK_SECRET_INBOUND")
        ):
            continue
        made[name] = stored.get(name) or make()
    if made:
        VAR.mkdir(exist_ok=True)
        DEV_ENV.write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in made.items()))
        DEV_ENV.chmod(0o600)
    return made


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _base_port() -> int:
    """honcho gives the Procfile's processes base, base+100, base+200: find a free trio."""
    for base in range(8000, 8100):
        if all(_port_free(base + step) for step in (0, 100, 200)):
            return base
    raise click.ClickException("no free ports between 8000 and 8300")


def run_stack() -> None:
    env = dict(os.environ)
    # The Procfile's commands (uvicorn, webhooks) live next to this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(_dev_credentials())
    redis: RedisServer | None = None
    if not _configured("REDIS_URL"):
        redis = RedisServer(VAR / "redis").start()
        env["REDIS_URL"] = redis.url
        click.echo(f"redis:     {redis.url} (append-only, data in {VAR / 'redis'})")
    env.setdefault("HOST", "127.0.0.1")
    if not _configured("WEBHOOK_HANDLERS"):
        env["WEBHOOK_HANDLERS"] = "examples.handlers"
    base = _base_port()
    web = f"http://127.0.0.1:{base}"
    click.echo(f"receiver:  {web}/webhooks/inbound   (health: {web}/readyz)")
    click.echo(
        f"dashboard: http://127.0.0.1:{base + 200}/   "
        f"(login in {DEV_ENV} or your RQ_DASHBOARD_* variables)"
    )
    click.echo("send a signed test event (the secret is read from var/dev.env or .env):")
    click.echo(
        '  BODY=\'{"id":"evt_1","type":"order.created"}\'\n'
        "  SECRET=$(set -a; [ -f .env ] && . ./.env; [ -f var/dev.env ] && . ./var/dev.env; "
        'echo "$WEBHOOK_SIGNING_SECRET")\n'
        '  SIG=$(printf %s "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed \'s/^.* //\')\n'
        f'  curl -s {web}/webhooks/inbound -H "X-Signature-256: $SIG" -d "$BODY"'
    )
    honcho = [sys.executable, "-m", "honcho", "start", "-f", "Procfile", "-p", str(base)]
    proc = subprocess.Popen(honcho, env=env)  # noqa: S603 - our own fixed command line

    def forward(signum: int, _frame: object) -> None:
        # honcho stops every process it started; Redis is stopped below, once it has.
        proc.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    try:
        proc.wait()
    finally:
        if redis is not None:
            redis.stop()
    sys.exit(proc.returncode or 0)
