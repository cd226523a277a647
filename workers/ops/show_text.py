"""How a `show` prints its fields and payload for a person: text, never Python's reprs.

Every value may come from a provider (headers, ids, the payload) or from Redis, so every
line is escaped for the terminal (`cell`, `block`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import click

from workers.ops.common import block, cell

WIDTH = 13  # the values of `name: value` lines start in one column


def field_text(value: object) -> str:
    """One value as a person reads it: yes/no, `-` for nothing, no brackets or quotes."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == "":
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "(none)"
    return str(value)


def print_fields(fields: Mapping[str, object]) -> None:
    """`name: value` lines; a mapping (the headers) as its own indented `name: value`
    lines under its name, `(none)` when empty."""
    for name, value in fields.items():
        label = f"{name + ':':<{WIDTH}}"
        if isinstance(value, Mapping):
            if not value:
                click.echo(f"{label} (none)")
                continue
            click.echo(label.rstrip())
            for key, item in value.items():
                click.echo(f"  {cell(key)}: {cell(field_text(item))}")
            continue
        click.echo(f"{label} {cell(field_text(value))}")


def pretty_payload(payload: str) -> str:
    """A JSON payload indented as the Events page shows it; anything else as it came."""
    try:
        parsed = json.loads(payload)
    except ValueError:
        return payload
    pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
    try:
        pretty.encode()
    except UnicodeEncodeError:  # a lone surrogate (`"\ud800"` is valid JSON): escaped
        pretty = json.dumps(parsed, indent=2)
    return pretty


def print_payload(payload: str) -> None:
    click.echo("payload:")
    click.echo(block(pretty_payload(payload) if payload else "(empty)"))
