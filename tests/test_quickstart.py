"""README.md's quick start, verbatim: its `make run` line, then each command of its steps 1-3
from a second terminal with nothing exported, each answering as the README shows (ports,
job ids and times aside)."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.processes import wait_until
from tests.test_devstack import DEVSTACK, Terminal, _answers, _checkout, unconfigured_env
from tests.test_devstack import make_run as make_run  # the fixture
from workers.dev.stackfile import StackFile

_VOLATILE = (
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"), "<time>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hex>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"\s+"), " "),
)


def normal(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text.strip()


@dataclass(frozen=True, slots=True)
class Step:
    command: str  # as the README shows it, after the prompt
    expected: list[str]  # the lines it shows after it (none: only its exit status is shown)


def quick_start() -> tuple[str, list[Step]]:
    """The `make run` line, and the second terminal's commands of steps 1-3."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    first, second = section.split("Then, in a second terminal", 1)
    run_line = re.search(r"^\$ (.*make run)$", first, re.MULTILINE)
    assert run_line is not None
    steps_text = second.split("\n4. ", 1)[0]
    steps: list[Step] = []
    for block_or_inline in re.finditer(
        r"```console\n(.*?)```|`(\.venv/bin/webhooks [^`]+)`", steps_text, re.DOTALL
    ):
        block, inline = block_or_inline.groups()
        if inline is not None:
            if not any(s.command == inline for s in steps):
                steps.append(Step(inline, []))
            continue
        for line in (line.strip() for line in block.splitlines()):
            if line.startswith("$ "):
                steps.append(Step(line[2:], []))
            elif line:
                steps[-1].expected.append(line)
    return run_line.group(1), steps


def test_the_quick_start_is_read_whole() -> None:
    run_line, steps = quick_start()
    assert run_line == "WEBHOOK_SOURCES=inbound,stripe make run"
    commands = [s.command.split("#")[0].split() for s in steps]
    assert [c[1:3] for c in commands] == [
        ["send", "stripe"],
        ["send", "stripe"],
        ["send", "inbound"],
        ["dead", "list"],
        ["dead", "requeue"],
    ]


@pytest.mark.e2e
@pytest.mark.xdist_group(DEVSTACK)
@pytest.mark.timeout(300)
def test_the_readme_quick_start_answers_as_it_shows_from_a_second_terminal(
    tmp_path: Path, make_run: Callable[..., Terminal]
) -> None:
    run_line, steps = quick_start()
    *assignments, make, run = shlex.split(run_line)
    assert (make, run) == ("make", "run")
    root = _checkout(tmp_path)
    terminal = make_run(root, **dict(a.split("=", 1) for a in assignments))
    wait_until(lambda: "send:  " in terminal.output, 90, f"make run to start:\n{terminal.output}")
    # As a person waits for the receiver's and the worker's start lines.
    stack = StackFile.read(root / "var" / "stack.json")
    assert stack is not None
    wait_until(lambda: _answers(stack.receiver + "/readyz"), 60, "the receiver")
    wait_until(lambda: "worker.1" in terminal.output, 60, "the worker")
    second_terminal = unconfigured_env()  # nothing exported

    def typed(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            shlex.split(command, comments=True),
            cwd=root,
            env=second_terminal,
            capture_output=True,
            text=True,
            check=False,
        )

    def answers(step: Step) -> bool:
        done = typed(step.command)
        # A terminal shows both streams: the command says which Redis on stderr, first.
        printed = done.stderr + done.stdout
        shown = [normal(line) for line in printed.splitlines() if line.strip()]
        answered.append(done)
        if not step.expected:  # a command shown inline, not its answer: its status only
            return done.returncode == 0
        return done.returncode == 0 and shown == [normal(line) for line in step.expected]

    answered: list[subprocess.CompletedProcess[str]] = []
    for step in steps:
        try:
            if step.command.startswith(".venv/bin/webhooks dead list"):
                # Step 2's event is a dead letter after the development retries (~40 s):
                # a person types this once the first terminal says so (each try is a
                # process start: polling with it cost the suite half a minute of CPU).
                flaky = next(s.command for s in steps if "demo.flaky" in s.command).split()
                line = f"dead_lettered inbound {flaky[flaky.index('--id') + 1]}"
                wait_until(lambda line=line: line in terminal.output, 120, line)
                wait_until(lambda step=step: answers(step), 30, step.command)
            else:  # typed once: a second send would be a duplicate
                assert answers(step)
        except AssertionError:
            last = answered[-1]
            raise AssertionError(
                f"$ {step.command}\nexpected: {step.expected}\nexit {last.returncode}\n"
                f"{last.stdout}{last.stderr}\n--- make run:\n{terminal.output}"
            ) from None
    terminal.press_ctrl_c()
    assert terminal.process.wait(60) == 0
