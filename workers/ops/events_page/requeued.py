"""The events one bulk requeue put back, kept a while: the result's link to them.

After a bulk requeue, the search it was made from (say `status=dead`) no longer shows
them: they are queued, running or done. So the action keeps their ledger record keys in a
sorted set scored by receipt time (`Keys.requeued`), named by a random token, for
KEEP seconds; the page's result links to `/events?requeued=<token>`, a search that walks
that set instead of the whole ledger's index (`search.py`) and takes every other filter
as usual: the 400 requeued, which of them are done, which are dead again.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from typing import cast

from redis import Redis

from app.formats import text
from app.keys import Keys
from workers.ops.ledger import EventLedger

KEEP = 7 * 86_400  # an operator looks at the outcome the next day, or after a weekend
TOKEN = re.compile(r"[A-Za-z0-9_-]{16}")


def remember(connection: Redis, keys: Keys, requeued: Iterable[tuple[str, str, float]]) -> str:
    """Keep these events (source, event id, receipt time); the token that names them."""
    token = secrets.token_urlsafe(12)  # 16 characters of TOKEN
    scored = {keys.event(source, event_id): when for source, event_id, when in requeued}
    key = keys.requeued(token)
    with connection.pipeline(transaction=True) as pipe:
        if scored:
            pipe.zadd(key, scored)
        pipe.expire(key, KEEP)
        pipe.execute()
    return token


def valid(token: str) -> bool:
    """A token this page could have made: anything else is never put in a key."""
    return TOKEN.fullmatch(token) is not None


def kept(connection: Redis, keys: Keys, token: str) -> bool:
    return bool(connection.exists(keys.requeued(token)))


def members(connection: Redis, keys: Keys, token: str) -> frozenset[tuple[str, str]]:
    """The events (source, event id) a token names; none once it has expired."""
    ledger = EventLedger(keys, connection)
    found = cast(list[bytes], connection.zrange(keys.requeued(token), 0, -1))
    names = (ledger.source_and_id(text(member)) for member in found)
    return frozenset(name for name in names if name is not None)
