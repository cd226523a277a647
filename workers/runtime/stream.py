"""Redis commands streamed ahead of their replies: the batch runner's one connection.

Each attempt's bookkeeping (its start; each handler's success, when another follows; its
end) must reach Redis before what comes next runs, so a worker that dies leaves Redis
knowing how far it got; waiting for each reply would cost a round trip per write.

A lost connection does not end the batch's run: the stream says it is `lost` and drops
what it would write, and the runner reports to the worker what it could not write (a
handler that returned is settled by the worker once Redis answers, never run again).
"""

from __future__ import annotations

from typing import Any

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# What a lost (cut, reset, timed-out) connection raises.
LINK_ERRORS = (RedisConnectionError, RedisTimeoutError)


class Stream:
    """Commands sent to Redis at each `send`; their replies are read at the end.

    A pipeline would hold them back until `execute` and wait for the replies; these must
    reach Redis before the handler they announce runs, without the handler waiting for a
    reply. What announces one job's start (meta, ledger, counter) goes in one write."""

    def __init__(self, connection: Redis) -> None:
        self.pool = connection.connection_pool
        self.connection = self.pool.get_connection()
        self.queued: list[bytes] = []
        self.unread = 0
        # The connection failed: nothing more is sent on it, and what was is not known
        # to have reached Redis.
        self.lost = False

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute_command(self, *args: Any, **options: Any) -> None:
        if self.lost:
            return
        self.queued += self.connection.pack_command(*args)  # type: ignore[no-untyped-call]
        self.unread += 1

    def send(self) -> bool:
        """Send what is queued; False once the connection is lost (now or before)."""
        if self.queued and not self.lost:
            packed, self.queued = b"".join(self.queued), []
            try:
                self.connection.send_packed_command([packed])  # type: ignore[no-untyped-call]
            except LINK_ERRORS:
                self.lose()
        return not self.lost

    def lose(self) -> None:
        self.lost, self.queued, self.unread = True, [], 0
        self.connection.disconnect()  # type: ignore[no-untyped-call]

    def close(self) -> None:
        try:
            self.send()
            for _ in range(self.unread):
                self.connection.read_response()
        except LINK_ERRORS:
            self.lose()
        finally:
            self.unread = 0
            self.pool.release(self.connection)
