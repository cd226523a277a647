"""`honcho start` for `make run`, with one line per lifecycle step.

honcho's own manager says `SIGTERM received`, `sending SIGTERM to web.1 (pid 123)` and
`web.1 stopped (rc=-15)` for a Ctrl+C that stops everything as asked, which reads as a
failure although `make run` exits 0; and its time prefix doubles the time our text log lines
already start with. Here a stop that was asked for reads `stopping` and `web.1 stopped`; a
process that ends by itself, or has to be killed, still says so with its status.

honcho internals relied on (honcho 2.0; the e2e test tests/test_terminal_quiet.py pins
them): `honcho.command.Manager` is the name `command_start` builds its manager with, the
manager reports through `_system_print(text)` with the texts matched below, and passes
process lines to `Printer.write(Message)`.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from honcho import command
from honcho.manager import Manager
from honcho.printer import Message, Printer

_SIGNAL = re.compile(r"^SIG(?:INT|TERM) received$")
_SENDING = re.compile(r"^sending SIGTERM to \S+ \(pid \d+\)$")
_STOPPED = re.compile(r"^(?P<name>\S+) stopped \(rc=(?P<rc>-?\d+)\)$")
# How a process stopped by the SIGTERM it was sent ends: its own clean exit, or the signal.
_STOPPED_AS_ASKED = {0, -15, 143}
# `HH:MM:SS ` at a line's start: the time our text formatter writes, repeating the printer's.
_OWN_TIME = re.compile(r"^\d\d:\d\d:\d\d ")


class LinePrinter(Printer):  # type: ignore[misc]
    """honcho's printer, without the time a process line already carries."""

    def write(self, message: Message) -> None:
        if self.prefix and message.name != "system":
            data = message.data
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            lines = [_OWN_TIME.sub("", line, count=1) for line in text.splitlines()]
            message = message._replace(data="\n".join(lines) + "\n")
        super().write(message)


class StackManager(Manager):  # type: ignore[misc]
    """honcho's manager, telling a requested stop from a failure."""

    def __init__(self, printer: Printer | None = None) -> None:
        given = printer if printer is not None else Printer(sys.stdout)
        super().__init__(LinePrinter(given.output, colour=given.colour, prefix=given.prefix))
        self.stopping = False

    def _system_print(self, data: str) -> None:
        text = data.rstrip("\n")
        if _SIGNAL.match(text):
            self.stopping = True
            text = "stopping"
        elif _SENDING.match(text):
            return  # each process says `stopped` when it has
        elif (stopped := _STOPPED.match(text)) is not None:
            name, rc = stopped["name"], int(stopped["rc"])
            if self.stopping and rc in _STOPPED_AS_ASKED:
                text = f"{name} stopped"
            else:
                how = f"by signal {-rc}" if rc < 0 else f"with status {rc}"
                text = f"{name} ended {how}; stopping the others"
                # honcho now stops the others: theirs are stops as asked.
                self.stopping = True
        super()._system_print(text + "\n")


def main(argv: list[str] | None = None) -> Any:
    """`honcho` with this manager: the same arguments, the same .env and port handling."""
    command.Manager = StackManager
    return command.main(argv)


if __name__ == "__main__":
    main()
