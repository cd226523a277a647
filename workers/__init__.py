"""The worker side: user handlers register here and the RQ worker runs them.

from workers import Event, PermanentError, handler

@handler("inbound", "order.created")
def sync_order(event: Event) -> None: ...

The names are imported when first asked for (PEP 562), not with the package: every module
under `workers` runs this file first, and `webhooks --help` or `webhooks dead list` need
neither RQ's job machinery nor the handler loop that `workers.registry` brings.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workers.event import Event, PermanentError
    from workers.registry import handler
    from workers.versions import newer_version

__all__ = ["Event", "PermanentError", "handler", "newer_version"]

# Where each public name lives.
_HOMES = {
    "Event": "workers.event",
    "PermanentError": "workers.event",
    "handler": "workers.registry",
    "newer_version": "workers.versions",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'workers' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
