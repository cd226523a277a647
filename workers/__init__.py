"""The worker side: user handlers register here and the RQ worker runs them.

from workers import Event, PermanentError, handler

@handler("inbound", "order.created")
def sync_order(event: Event) -> None: ...
"""

from workers.event import Event, PermanentError
from workers.registry import handler
from workers.versions import newer_version

__all__ = ["Event", "PermanentError", "handler", "newer_version"]
