"""The `webhooks` command's group (`workers/ops/lazy_group.py`), in-process: its help lists
each subcommand with its summary without importing it; a subcommand is imported when it
runs; what is not a command is refused by name."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from workers.ops.lazy_group import Lazy, LazyGroup


@click.command()
def hello() -> None:
    """Say hello. Then more that the list leaves out."""
    click.echo("hello ran")


NOT_A_COMMAND = "not a click command"


def group(**lazy: Lazy) -> LazyGroup:
    made = LazyGroup("webhooks", lazy=lazy)

    @made.command(hidden=True)
    def secret() -> None:
        """Never listed."""

    @made.command()
    def loaded() -> None:
        """An imported command."""

    return made


def test_the_help_lists_a_lazy_command_by_its_summary_without_importing_it() -> None:
    # The module does not exist: importing it would fail the help.
    made = group(later=Lazy("tests.no_such_module:command", "What it does, in a line."))
    result = CliRunner().invoke(made, ["--help"])
    assert result.exit_code == 0, result.output
    rows = [line.split(None, 1) for line in result.output.split("Commands:")[1].splitlines()]
    assert [row for row in rows if row] == [
        ["later", "What it does, in a line."],
        ["loaded", "An imported command."],
    ]  # the hidden one left out


def test_a_lazy_command_is_imported_when_it_runs() -> None:
    made = group(hello=Lazy("tests.test_lazy_group:hello", "Say hello."))
    result = CliRunner().invoke(made, ["hello"])
    assert (result.exit_code, result.output) == (0, "hello ran\n")
    assert made.commands["hello"] is hello


def test_a_lazy_name_that_is_not_a_command_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"tests\.test_lazy_group:NOT_A_COMMAND is not a click"):
        Lazy("tests.test_lazy_group:NOT_A_COMMAND", "Nothing.").load()
