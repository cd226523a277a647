"""What a handler receives, and the one exception that skips the retries."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class PermanentError(Exception):
    """Raise from a handler when retrying cannot help: the event is dead-lettered at once."""


@dataclass(frozen=True, slots=True)
class Event:
    source: str
    id: str
    type: str
    payload: Any
    raw: bytes = field(repr=False)
    headers: dict[str, str]
    received_at: datetime
    attempt: int  # 1-based, counted across retries and requeues
