"""A user's project, written into a `pytester` directory: its `.env`, its handler module and
its test modules, run by pytest with rq-webhook-receiver's plugin (the entry point, loaded as
for any install)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

# Imported here, before any inner run: httpx imports httpcore only when it first sends,
# and caches httpcore's exception classes then. A first send inside an in-process run
# (a key fetch) would import httpcore there, and pytester drops the modules an inner run
# imported: this process's later httpcore errors would then escape httpx unmapped
# (httpcore.ConnectError, not httpx.ConnectError), failing tests run after it here.
import httpcore  # noqa: F401
import pytest

# A handler module as a user writes one, for a Stripe source and its "*" handlers.
BILLING = """
from workers import Event, PermanentError, handler

@handler("stripe", "invoice.paid")
def record_payment(event: Event) -> None:
    invoice = event.payload["data"]["object"]
    if "amount_paid" not in invoice:
        raise PermanentError("an invoice without amount_paid")
    if invoice["amount_paid"] < 0:
        raise ValueError("a negative amount")

@handler("stripe", "invoice.paid")
async def notify(event: Event) -> None:
    pass

@handler("stripe", "*")
def audit(event: Event) -> None:
    pass

@handler("stripe", "customer.subscription.updated",
         entity="data.object.id", version="data.object.version")
def apply_subscription(event: Event) -> None:
    pass
"""


def user_project(pytester: pytest.Pytester, env: str = "", **modules: str) -> None:
    """`.env` (what the project configures), then its modules (`name=source`)."""
    if env:
        (pytester.path / ".env").write_text(env)
    if modules:
        pytester.makepyfile(**modules)


# Plugins of this suite's environment that a user's project does without: hypothesis's
# summary alone costs a second per run (it imports hypothesis, which pytester drops again
# after each in-process run). Our packages, imported by this process already, cannot be
# assertion-rewritten for the inner run as they are for a user's: it warns.
ASIDE = (
    *("-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:cacheprovider"),
    *("-W", "ignore::pytest.PytestAssertRewriteWarning"),
    # pytest-asyncio (the suite's, for tests/testing/test_plugin_async.py) warns at every
    # run of a project that does not set it.
    *("-o", "asyncio_default_fixture_loop_scope=function"),
)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The project's tests, run by pytest in this process."""
    return pytester.runpytest_inprocess(*ASIDE, *args)


# --- a project laid out as FastAPI's tutorial lays it out, run as its developers run it ---

# Its package `app`: the project's own FastAPI app (main.py) and its handlers (handlers.py).
# Every module of the project says in `imported` that it was imported.
SAYS_IMPORTED = """
with open({marker!r}, "a") as said:
    said.write(__name__ + "\\n")
"""
FASTAPI_MAIN = """
from fastapi import FastAPI

from app.handlers import PAID

app = FastAPI()


@app.get("/paid/{invoice}")
def paid(invoice: str) -> int:
    return PAID[invoice]
"""
FASTAPI_HANDLERS = """
from workers import Event, handler

PAID: dict[str, int] = {}


@handler("stripe", "invoice.paid")
def record_payment(event: Event) -> None:
    invoice = event.payload["data"]["object"]
    PAID[invoice["id"]] = invoice["amount_paid"]
"""
# Its tests, as docs/testing.md writes them: the handlers and workers.testing imported at
# the top, the project's own app tested beside them.
FASTAPI_TESTS = """
from fastapi.testclient import TestClient

from app.handlers import PAID
from app.main import app
from workers.testing import Deliver, EventFactory


def test_a_paid_invoice_is_recorded(webhook_event: EventFactory, deliver: Deliver) -> None:
    event = webhook_event("stripe", "invoice.paid", {"id": "in_1", "amount_paid": 1200})
    assert deliver(event).states == {"record_payment": "done"}
    assert PAID["in_1"] == 1200
    assert TestClient(app).get("/paid/in_1").json() == 1200
"""
PYTHONPATH_HERE = '[tool.pytest.ini_options]\npythonpath = ["."]\n'
# How a project puts its own directory on sys.path for plain `pytest` (`python -m pytest`
# has it there anyway): the `pythonpath` setting, tests/ as a package (its base directory
# is the project's), a conftest.py at the top (prepend mode adds its directory), or nothing.
ON_SYS_PATH = ("pythonpath", "tests-package", "conftest", "nothing")


def fastapi_project(root: Path, on_sys_path: str = "pythonpath") -> Path:
    """The project in `root`; returns the file its modules write their names to."""
    marker = root / "imported"
    says = SAYS_IMPORTED.format(marker=str(marker))
    (root / "app").mkdir()
    (root / "tests").mkdir()
    modules = {
        "app/__init__.py": "",
        "app/main.py": says + FASTAPI_MAIN,
        "app/handlers.py": says + FASTAPI_HANDLERS,
        "tests/test_handlers.py": says + FASTAPI_TESTS,
    }
    if on_sys_path == "pythonpath":
        modules["pyproject.toml"] = PYTHONPATH_HERE
    elif on_sys_path == "tests-package":
        modules["tests/__init__.py"] = ""
    elif on_sys_path == "conftest":
        modules["conftest.py"] = says
    for name, text in modules.items():
        (root / name).write_text(text)
    (root / ".env").write_text("WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=app.handlers\n")
    return marker


def imported(marker: Path) -> list[str]:
    """The project's modules imported so far, in order."""
    return marker.read_text().split() if marker.exists() else []


def follow(root: Path, line: str) -> None:
    """Do what the clash's one line says: rename the package as it says, with its imports
    and WEBHOOK_HANDLERS, and put the project's directory on sys.path if it says so."""
    found = re.search(r"e\.g\. (\w+) -> (\w+)", line)
    assert found, line
    old, new = found.groups()
    (root / old).rename(root / new)
    for path in [*root.rglob("*.py"), root / ".env"]:
        text = path.read_text()
        text = re.sub(rf"^(from|import) {old}\b", rf"\1 {new}", text, flags=re.MULTILINE)
        path.write_text(text.replace(f"WEBHOOK_HANDLERS={old}.", f"WEBHOOK_HANDLERS={new}."))
    if "on sys.path (pytest's `pythonpath` setting)" in line:
        (root / "pyproject.toml").write_text(PYTHONPATH_HERE)


# The two ways a project runs its tests, from its own directory, with this environment's
# Python: the `pytest` script (its directory, not the project's, is sys.path[0]) and
# `python -m pytest` (the current directory is).
COMMANDS = {
    "pytest": [str(Path(sys.executable).parent / "pytest")],
    "python -m pytest": [sys.executable, "-m", "pytest"],
}


def run_in(root: Path, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`command` (a key of COMMANDS) in `root`, as the project's developer runs it."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [*COMMANDS[command], *ASIDE, "-q", *args],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def the_one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a usage error stops the run with; nothing else went wrong."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR: ")]
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert len(errors) == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return errors[0]
