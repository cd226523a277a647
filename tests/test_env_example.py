"""`.env.example`, copied to `.env`: `make run` starts with it as it is, and a production
configuration made from it that still holds placeholders stops with one message naming
every one of them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from dotenv import dotenv_values

from app.settings import ConfigError, Settings
from tests import test_devstack
from tests.conftest import ROOT
from tests.processes import wait_until
from tests.test_devstack import DEVSTACK, Terminal, _answers, _checkout, unconfigured_env
from workers.dev.devenv import DEV_RETRY_INTERVALS, DevSettings
from workers.dev.stack import _banner, _check
from workers.dev.stackfile import StackFile

EXAMPLE = ROOT / ".env.example"
# `make run` in a pseudo-terminal of a scratch checkout, as the dev-stack tests run it.
make_run = test_devstack.make_run
SEND = ("send", "inbound", "--id", "evt_copied", "--json")
# What `make run` chooses itself when unset, and production sets: set in the copied file,
# each one breaks `make run` (its own Redis, development secrets, short retries, text logs).
PRODUCTION_ONLY = (
    "REDIS_URL",
    "REDIS_SENTINELS",
    "WEBHOOK_SIGNING_SECRET",
    "WEBHOOK_SECRET_INBOUND",
    "RQ_DASHBOARD_USERNAME",
    "RQ_DASHBOARD_PASSWORD",
    "WEBHOOK_RETRY_INTERVALS",
    "WEBHOOK_HANDLERS",
    "WEBHOOK_LOG_FORMAT",
)


def _uncommented(names: set[str]) -> str:
    """.env.example with the lines of `names` uncommented, as production would."""
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        name = line.removeprefix("# ").partition("=")[0]
        lines.append(line.removeprefix("# ") if name in names else line)
    return "\n".join(lines) + "\n"


def test_the_copied_file_sets_nothing_make_run_chooses_itself() -> None:
    assert [n for n in dotenv_values(EXAMPLE) if n in PRODUCTION_ONLY] == []


def test_every_setting_is_in_the_file_with_its_production_value() -> None:
    commented = {
        line.removeprefix("# ").partition("=")[0]
        for line in EXAMPLE.read_text().splitlines()
        if re.match(r"^# [A-Z_]+=", line)
    }
    fields = {name.upper() for name in Settings.model_fields} - {"PER_SOURCE", "OTEL"}
    fields |= {"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT"}
    assert fields - commented - set(dotenv_values(EXAMPLE)) == set()


def test_production_placeholders_stop_startup_in_one_message_naming_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = {
        "WEBHOOK_SIGNING_SECRET",
        "RQ_DASHBOARD_USERNAME",
        "RQ_DASHBOARD_PASSWORD",
        "WEBHOOK_SECRET_STRIPE",
    }
    text = _uncommented(names).replace(
        "WEBHOOK_SOURCES=inbound:hmac\n", "WEBHOOK_SOURCES=inbound:hmac,stripe\n"
    )
    (tmp_path / ".env").write_text(text)
    monkeypatch.chdir(tmp_path)
    values = [v for k, v in dotenv_values(tmp_path / ".env").items() if k in names and v]
    with pytest.raises(ConfigError) as error:
        Settings.load()
    message = str(error.value)
    assert message == (
        "WEBHOOK_SECRET_STRIPE, WEBHOOK_SIGNING_SECRET and RQ_DASHBOARD_PASSWORD are still "
        "the placeholders from .env.example: set real secrets"
    )
    assert not [value for value in values if value in message]
    # `make run` checks the same way, before it starts anything.
    with pytest.raises(click.ClickException, match=r"^WEBHOOK_SECRET_STRIPE, WEBHOOK_SIGN"):
        _check(dict(os.environ), {})


@pytest.mark.e2e
@pytest.mark.xdist_group(DEVSTACK)
def test_make_run_starts_with_the_copied_file_as_it_is(
    tmp_path: Path, make_run: Callable[..., Terminal]
) -> None:
    root = _checkout(tmp_path)
    shutil.copy(EXAMPLE, root / ".env")
    # What the environment sets wins over the copied file, in every process of the stack
    # (honcho used to put .env over it: the receiver knew no source `other`).
    sources = "inbound,other:hmac"
    terminal = make_run(root, WEBHOOK_SOURCES=sources)
    wait_until(lambda: "send:  " in terminal.output, 60, f"make run to start:\n{terminal.output}")
    stack = StackFile.read(root / "var" / "stack.json")
    # Its own Redis (this machine has one on 6379 that it must not use), short retries.
    assert stack is not None and ":6379/" not in stack.redis_url, terminal.output
    assert f"redis:     {stack.redis_url} (append-only" in terminal.output
    assert stack.settings["WEBHOOK_RETRY_INTERVALS"] == DEV_RETRY_INTERVALS
    assert "development intervals, as WEBHOOK_RETRY_INTERVALS is not set" in terminal.output
    # The banner comes before the processes: wait for the receiver before sending.
    wait_until(lambda: _answers(stack.receiver + "/readyz"), 60, "the receiver")

    clean = unconfigured_env()
    sent = subprocess.run(  # as the banner's send line says, with --json
        [str(ROOT / ".venv" / "bin" / "webhooks"), *SEND],
        cwd=root,
        env=clean,
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(sent.stdout)["status"] == "accepted", (sent, terminal.output)
    other = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "webhooks"), "send", "other", "--json"],
        cwd=root,
        env={**clean, "WEBHOOK_SOURCES": sources},
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(other.stdout)["status"] == "accepted", (other, terminal.output)
    # Text logs: the receiver's line for it, as a person reads it (JSON would quote it).
    wait_until(
        lambda: "accepted inbound evt_copied" in terminal.output, 30, "the receiver's log line"
    )
    assert not re.search(r"\| \{\"", terminal.output), terminal.output


def test_a_configured_redis_is_named_in_the_banner_not_used_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An uncommented REDIS_URL (as an old copy of .env.example has) means no Redis of its own.
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("REDIS_URL=redis://ops:s3cr3t-pw@localhost:6379/0\n")
    settings = Settings.load(webhook_signing_secret="a-real-secret-of-inbound")
    lines = _banner(None, "http://w", "http://d", settings, DevSettings({}))
    assert lines[0] == (
        "redis:     localhost:6379/0 (REDIS_URL is set: make run started no Redis of its own)"
    )
    assert "s3cr3t-pw" not in "\n".join(lines)
