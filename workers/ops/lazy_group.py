"""A click group whose subcommands are imported only when one of them runs.

`webhooks --help` used to import every subcommand's module, and with them Redis, RQ,
pydantic, httpx and, through the Events page, Flask, Jinja2 and rq-dashboard: some 900
modules to print a list. Here a subcommand is named by where it lives (`module:attribute`)
and its one-line summary, which the group's help prints without importing it; the module
is imported when the subcommand is asked for (run, or its own `--help`).

The summary is the first sentence of the command's docstring, written twice: the command's
own `--help` shows its docstring, the group's list the summary (`tests/test_cli_imports.py`
checks that they agree).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import click


@dataclass(frozen=True, slots=True)
class Lazy:
    """A subcommand not imported yet: where it is, and what the group's help says of it."""

    where: str  # "package.module:attribute"
    summary: str

    def load(self) -> click.Command:
        module, _, attribute = self.where.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.where} is not a click command")
        return command


class LazyGroup(click.Group):
    def __init__(
        self, *args: object, lazy: dict[str, Lazy] | None = None, **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(self.lazy[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's list of subcommands, with the summaries of those not imported."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows: list[tuple[str, str]] = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is not None:
                if loaded.hidden:
                    continue
                rows.append((name, loaded.get_short_help_str(limit)))
            else:
                # Shortened as click shortens a command's own help.
                stand_in = click.Command(name, help=self.lazy[name].summary)
                rows.append((name, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
