"""What `webhooks` imports to print its help: only what the command asked for runs.

Each case runs the command's entry point in a fresh interpreter, as the console script
does, then prints the modules it loaded: the dashboard's libraries (Flask, Jinja2,
rq-dashboard) come only with the dashboard, and the top-level help loads none of the
subcommands' modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from tests.processes import unmeasured
from workers.ops.cli import SUBCOMMANDS, main

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD_LIBRARIES = {"flask", "jinja2", "rq_dashboard", "werkzeug"}
# The top-level help: click and the command's own module, over an interpreter's ~90 (it
# was 888 when every subcommand came with it).
HELP_MODULES = 200
# A subcommand's help loads its module: Redis, RQ, the settings (about 700; 888 with the
# dashboard's libraries).
SUBCOMMAND_MODULES = 800

_LOADED = """
import json, sys
from workers.ops.cli import main
try:
    main(sys.argv[1:], prog_name="webhooks")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture
def loaded() -> Callable[..., set[str]]:
    """The modules loaded by `webhooks ARGS...`, run in a fresh interpreter."""
    env = unmeasured({k: v for k, v in os.environ.items() if not k.startswith("WEBHOOK_")})

    def run(*args: str) -> set[str]:
        ran = subprocess.run(
            [sys.executable, "-c", _LOADED, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return set(json.loads(ran.stdout.strip().splitlines()[-1]))

    return run


def top_level(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_the_top_level_help_loads_no_subcommand_and_no_dashboard_library(
    loaded: Callable[..., set[str]],
) -> None:
    modules = loaded("--help")
    assert not top_level(modules) & DASHBOARD_LIBRARIES
    assert not {lazy.where.partition(":")[0] for lazy in SUBCOMMANDS.values()} & modules
    assert not top_level(modules) & {"redis", "rq", "pydantic", "httpx"}
    assert len(modules) <= HELP_MODULES, len(modules)


@pytest.mark.parametrize(
    "args",
    [
        ("dead", "list", "--help"),
        ("dead", "requeue", "--help"),
        ("events", "show", "--help"),
        ("replay", "--help"),
        ("send", "--help"),
        ("sources", "--help"),
        ("config", "check", "--help"),
        ("dashboard", "--help"),
    ],
    ids=" ".join,
)
def test_a_subcommand_loads_no_dashboard_library(
    loaded: Callable[..., set[str]], args: tuple[str, ...]
) -> None:
    modules = loaded(*args)
    assert not top_level(modules) & DASHBOARD_LIBRARIES
    assert len(modules) <= SUBCOMMAND_MODULES, len(modules)


def test_the_help_lists_each_subcommand_with_its_own_summary() -> None:
    """The summary the top-level help prints without importing a subcommand is the first
    sentence its own help starts with."""
    ctx = click.Context(main)
    for name, lazy in SUBCOMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.help is not None
        assert command.help.startswith(lazy.summary), name


@pytest.mark.parametrize(
    "args",
    [
        ("dead", "list", "--help"),
        ("events", "list", "--help"),
        ("replay", "ledger", "--help"),
        ("replay", "provider", "--help"),
    ],
    ids=" ".join,
)
def test_a_command_that_runs_over_a_clusters_shards_leaves_rq_unimported(
    loaded: Callable[..., set[str]], args: tuple[str, ...]
) -> None:
    """Its shards' processes are forked first, each importing rq under its shard's prefix
    (`workers/ops/shard_fanout.py`): rq imported before is imported under none of them."""
    assert "rq" not in top_level(loaded(*args))
