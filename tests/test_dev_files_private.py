"""What `make run` writes under `var/` is its owner's alone from the moment it exists: the
development credentials (`var/dev.env`), the stack's files (`var/stack.json`,
`var/stack.env`), the development private keys (`var/dev-keys/`) and the development
Redis's data (`var/redis/`), `var/` itself 700.

Observed, not inferred from the code: each writer runs in a child process under umask 000
(the most permissive), with an audit hook (`sys.addaudithook`) that looks at every file and
directory under `var/` at each open, chmod, rename, mkdir and process start, so a file
written with the umask's mode and tightened afterwards (`write_text`, then `chmod(0o600)`)
is seen in the moment between the two."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

WRITERS = r'''
import json, os, stat, sys
from pathlib import Path

os.umask(0o000)
from redis import Redis
from workers.dev.devenv import dev_credentials
from workers.dev.devkeys import dev_keys, record_key_server
from workers.dev.redis_server import RedisServer
from workers.dev.stackfile import StackFile, write_stack_secrets

VAR = Path("var")
WATCHED = {"open", "os.chmod", "os.rename", "os.mkdir", "os.remove", "subprocess.Popen"}
seen = {}
looking = False


def exposed():
    """Each path under var/ (var/ too) that its group or others may read, with its mode."""
    found = {}
    paths = [VAR, *VAR.rglob("*")] if VAR.exists() else []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:
            continue  # replaced meanwhile
        if mode & 0o077:
            found[str(path)] = oct(mode)
    return found


def hook(event, args):
    global looking
    if event in WATCHED and not looking:
        looking = True
        try:
            seen.update(exposed())
        finally:
            looking = False


sys.addaudithook(hook)
dev_credentials()
StackFile(os.getpid(), "redis://127.0.0.1:1/0", {"WEBHOOK_RETRY_INTERVALS": "1"}).write()
write_stack_secrets({"STRIPE_API_KEY": "rk_test_stack-env-secret"})
keys = dev_keys()
record_key_server("http://127.0.0.1:1")
redis = RedisServer(VAR / "redis").start()
try:
    Redis(port=redis.port).set("k", "v")
    hook("open", ())
finally:
    redis.stop()
hook("open", ())
written = sorted(str(p) for p in VAR.rglob("*") if p.is_file())
print(json.dumps({"seen": seen, "written": written, "keys": [k.source for k in keys]}))
'''


def test_every_file_make_run_writes_under_var_is_private_from_its_creation(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text("WEBHOOK_SOURCES=inbound:hmac,bot:discord\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WEBHOOK_", "RQ_DASHBOARD_", "REDIS_"))
    }
    env["PYTHONPATH"] = str(ROOT)
    ran = subprocess.run(
        [sys.executable, "-c", WRITERS],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout.splitlines()[-1])
    assert report["keys"] == ["bot"]
    # Every writer wrote (else the check above proved nothing about it).
    written = set(report["written"])
    assert {"var/dev.env", "var/stack.json", "var/stack.env", "var/dev-keys/bot.pem"} <= written
    assert "var/dev-keys/key-server.url" in written
    assert [p for p in written if p.startswith("var/redis/")], written
    assert report["seen"] == {}
