"""Ctrl+C under `make run`: to the stack only, so make sees a clean exit.

A terminal sends Ctrl+C's SIGINT to its whole foreground process group: make, this process,
and whatever did not leave the group. GNU make, on SIGINT, waits for its recipe and then
kills itself with the same signal: `make run` could never exit 0, however cleanly the stack
stopped. So while the stack runs, this process moves to a process group of its own and makes
it the terminal's foreground group, as a shell does for a job; Ctrl+C then reaches only the
stack, which stops in order and gives the terminal back to make's group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator


def _foreground_terminal() -> int | None:
    """The terminal on stdin when this process is in its foreground group, else None."""
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
            return fd
    except (OSError, ValueError, AttributeError):
        pass
    return None


@contextlib.contextmanager
def own_foreground() -> Iterator[bool]:
    """Hold the terminal's foreground in a group of our own; True when taken."""
    fd = _foreground_terminal()
    if fd is None:
        yield False
        return
    previous = os.getpgrp()
    # A background group that touches the terminal gets SIGTTOU, which would stop it.
    old_ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    # Ctrl+Z would stop this group while make, not stopped, keeps the shell waiting.
    old_tstp = signal.signal(signal.SIGTSTP, signal.SIG_IGN)
    try:
        os.setpgid(0, 0)
        os.tcsetpgrp(fd, os.getpgrp())
    except OSError:
        signal.signal(signal.SIGTTOU, old_ttou)
        signal.signal(signal.SIGTSTP, old_tstp)
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):  # make's group may be gone already
            os.tcsetpgrp(fd, previous)
        signal.signal(signal.SIGTTOU, old_ttou)
        signal.signal(signal.SIGTSTP, old_tstp)
