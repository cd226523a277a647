"""How `webhooks replay` reads its arguments: `replay SOURCE` (the provider form), `replay
provider SOURCE`, and `replay ledger SOURCE`, a source named like a subcommand included."""

from __future__ import annotations

import click


class ReplayGroup(click.Group):
    """`replay SOURCE ...` and `replay provider SOURCE ...` read a provider's API, `replay
    ledger SOURCE ...` the stored events.

    A source may be named like a subcommand (`ledger`, `provider`). `replay ledger --since
    T` cannot be the ledger form, which needs a SOURCE: it is the provider form of the source
    named `ledger`. So a word that names a subcommand is that subcommand when what follows
    holds a positional argument, an option only the subcommand knows, or --help; otherwise
    it is the source of the provider form. `replay provider NAME` is never ambiguous."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        provider = self.commands["provider"]
        if args and (args[0] not in self.commands or _is_source(ctx, provider, args)):
            # Named by the source, so that its usage and errors read as what was typed:
            # `webhooks replay stripe ...`, not `webhooks replay provider`.
            ctx.meta[_IMPLICIT] = True
            return args[0], provider, args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Both forms, as they are typed."""
        formatter.write_usage(ctx.command_path, "SOURCE --since TIME [OPTIONS]")
        formatter.write_usage(
            ctx.command_path, "ledger SOURCE --since TIME [OPTIONS]", prefix=" " * len("Usage: ")
        )


_IMPLICIT = "webhooks.replay.implicit"


class ProviderCommand(click.Command):
    """`replay provider SOURCE`, also run as `replay SOURCE`: then its usage is that form."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if ctx.parent is not None and ctx.parent.meta.get(_IMPLICIT):
            formatter.write_usage(ctx.command_path, "--since TIME [OPTIONS]")
        else:
            super().format_usage(ctx, formatter)


def _is_source(ctx: click.Context, provider: click.Command, args: list[str]) -> bool:
    """Whether `args[0]`, a subcommand's name, is the SOURCE of the provider form."""
    rest = args[1:]
    if any(arg in ctx.help_option_names for arg in rest):
        return False
    options = {
        name: not option.is_flag
        for option in provider.params
        if isinstance(option, click.Option)
        for name in (*option.opts, *option.secondary_opts)
    }
    skip = False
    for index, arg in enumerate(rest):
        if skip:
            skip = False
        elif arg == "--":
            return index == len(rest) - 1  # what follows `--` is positional
        elif arg.startswith("-") and arg != "-":
            name, equals, _ = arg.partition("=")
            if name not in options:
                return False  # e.g. the ledger's --status: the ledger form
            skip = options[name] and not equals
        else:
            return False  # a SOURCE for the subcommand
    return True
