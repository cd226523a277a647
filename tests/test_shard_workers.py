"""`webhooks worker` on a cluster: which shards `--shards` names, and the supervisor of one
process per shard, shown with stand-in children that say when they start and stop."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.keys import Keys
from app.settings import ConfigError, Settings
from app.shards import Shards
from tests.conftest import SECRET
from tests.processes import wait_until
from workers.runtime.shard_workers import for_shard, parse_shards

SHARDS = Shards(16)


@pytest.mark.parametrize(
    ("spec", "chosen"),
    [
        (None, list(range(16))),
        ("7", [7]),
        ("0-3", [0, 1, 2, 3]),
        ("14-15,0,1-2", [14, 15, 0, 1, 2]),
    ],
)
def test_shards_are_every_one_or_those_named(spec: str | None, chosen: list[int]) -> None:
    assert parse_shards(spec, SHARDS) == chosen


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("16", "outside 0-15"), ("3-1", "outside 0-15"), ("a-b", "is not N or N-M"), ("", "not N")],
)
def test_a_bad_shard_range_is_one_line(spec: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        parse_shards(spec, SHARDS)


# A child that notes its start, and its SIGTERM, in its own file; `exit` ends it by itself.
CHILD = """
import signal, sys, time
log = open(sys.argv[1], "a")
log.write("start\\n"); log.flush()
def stop(*_):
    log.write("term\\n"); log.flush(); sys.exit(0)
signal.signal(signal.SIGTERM, stop)
if sys.argv[2] == "exit":
    sys.exit(3)
while True:
    time.sleep(0.05)
"""

SUPERVISOR = """
import sys
from workers.runtime.shard_workers import Child, ShardSupervisor
children = [Child(n, [sys.executable, "-c", {child!r}, f"{{sys.argv[1]}}/{{n}}", how])
            for n, how in enumerate(sys.argv[2:])]
sys.exit(ShardSupervisor(children, burst={burst}).run())
"""


def supervise(tmp_path: Path, *hows: str, burst: bool = False) -> subprocess.Popen[str]:
    code = textwrap.dedent(SUPERVISOR).format(child=CHILD, burst=burst)
    return subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path), *hows],
        cwd=Path(__file__).resolve().parent.parent,
        text=True,
    )


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_a_shards_process_that_ends_by_itself_is_started_again_and_sigterm_stops_all(
    tmp_path: Path,
) -> None:
    supervisor = supervise(tmp_path, "run", "exit")
    try:
        wait_until(lambda: lines(tmp_path / "1").count("start") >= 2, what="a restart")
        assert lines(tmp_path / "0") == ["start"]  # the other shard's runs on, once
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(10) == 0
    finally:
        supervisor.kill()
    assert lines(tmp_path / "0") == ["start", "term"]


def test_in_burst_mode_the_supervisor_ends_with_its_children_and_their_worst_exit(
    tmp_path: Path,
) -> None:
    supervisor = supervise(tmp_path, "exit", "exit", burst=True)
    try:
        assert supervisor.wait(20) == 3
    finally:
        supervisor.kill()
    assert lines(tmp_path / "0") == lines(tmp_path / "1") == ["start"]


def test_a_shards_process_names_its_keys_and_rqs_under_the_shards_tag() -> None:
    settings = Settings.load(webhook_signing_secret=SECRET, webhook_shards=16)
    assert settings.keys == Keys("webhook", "webhooks")
    shard = for_shard(settings, 5)
    assert shard.keys == Keys("webhook", "webhooks").sharded(SHARDS.tag(5))
    assert shard.keys.job("j") == f"{SHARDS.tag(5)}:rq:job:j"
