"""A Redis failure in one line a person can act on, for every process; never a password.

redis-py reports a refused TLS handshake as `ConnectionError("Error 1 connecting to ...")`
with the `ssl.SSLError` only in the exception's context, a wrong sentinel password as
`MasterNotFoundError` with the cause in its text, a wrong data-node password as
`AuthenticationError`. `describe` names the problem and what to check; `ProblemLog` says it
once per change instead of once per retry.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator

from redis.exceptions import (
    AuthenticationError,
    NoPermissionError,
    ResponseError,
)
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
)
from redis.exceptions import (
    TimeoutError as RedisTimeoutError,
)
from redis.sentinel import MasterNotFoundError

from app.cluster_target import ClusterTarget
from app.logs import logger
from app.redis_target import RedisTarget


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _tls_problem(exc: BaseException) -> str | None:
    for link in _chain(exc):
        if isinstance(link, ssl.SSLCertVerificationError):
            return (
                f"TLS handshake refused: the server's certificate was not accepted "
                f"({link.verify_message}); give its CA in REDIS_URL's ssl_ca_certs"
            )
        if isinstance(link, ssl.SSLError):
            reason = (link.reason or str(link)).lower().replace("_", " ")
            if "wrong version" in reason or "record layer" in reason or "packet length" in reason:
                return "TLS handshake failed: the server does not speak TLS there (use redis://)"
            if "certificate" in reason or "alert" in reason:
                return (
                    f"TLS handshake refused by the server ({reason}): it wants a client "
                    "certificate it trusts (REDIS_URL's ssl_certfile and ssl_keyfile)"
                )
            return f"TLS handshake failed ({reason})"
    return None


def describe(exc: BaseException, target: RedisTarget | ClusterTarget | None = None) -> str:
    """One line: where, what went wrong, what to check. Passwords are scrubbed."""
    where = target.where if target is not None else "redis"
    line = f"{where}: {_what(exc)}"
    for secret in target.secrets if target is not None else []:
        line = line.replace(secret, "***")
    return line.replace("\n", " ")


def what_went_wrong(exc: BaseException, target: RedisTarget | ClusterTarget) -> str:
    """`describe` without the where: for a line that already says where (a shard's)."""
    return describe(exc, target).removeprefix(f"{target.where}: ")


def _what(exc: BaseException) -> str:
    tls = _tls_problem(exc)
    if tls:
        return tls
    text = str(exc)
    if isinstance(exc, MasterNotFoundError):
        if "AuthenticationError" in text:
            return (
                "the sentinels refused the credentials (REDIS_SENTINEL_USERNAME, "
                "REDIS_SENTINEL_PASSWORD)"
            )
        # redis-py < 8 lists each sentinel's error as its text ("Error 111 ... Connection
        # refused"), redis-py 8 as its kind only ("network:ConnectionError", a sentinel
        # that did not answer in time "network:TimeoutError").
        if any(sign in text for sign in ("Connection refused", "Error ", "network:")):
            return "no sentinel answered (REDIS_SENTINELS: are they running, on those ports?)"
        return (
            "the sentinels name no reachable primary of that name (REDIS_SENTINEL_MASTER; "
            "during a failover, until a replica is promoted)"
        )
    if isinstance(exc, AuthenticationError):
        return (
            "authentication refused: wrong user or password in REDIS_URL, or the user is disabled"
        )
    if isinstance(exc, NoPermissionError):
        return f"the Redis user lacks a permission: {text}"
    if isinstance(exc, RedisTimeoutError):
        return "no answer in time (Redis busy, paused or unreachable)"
    if isinstance(exc, RedisConnectionError):
        if "Connection closed by server" in text or "Connection reset" in text:
            return "the server closed the connection (if it only speaks TLS, use rediss://)"
        if "refused" in text.lower():
            return "connection refused (is Redis running, on that port?)"
        if "previous master is now a slave" in text:
            return "the primary was demoted (a failover); reconnecting to the new one"
        return f"cannot connect ({_first_line(text)})"
    if isinstance(exc, ResponseError):
        return f"Redis refused a command: {_first_line(text)}"
    return f"{type(exc).__name__}: {_first_line(text)}"


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "no detail"
    return line if len(line) <= limit else line[: limit - 1] + "~"


class ProblemLog:
    """Logs a Redis problem when it starts or changes, and again every `repeat` seconds
    while it lasts, rather than on every retry; and once when it is over."""

    def __init__(
        self, process: str, target: RedisTarget | ClusterTarget | None, repeat: float = 60.0
    ) -> None:
        self.process = process
        self.target = target
        self.repeat = repeat
        self.current: str | None = None
        self.logged_at = 0.0

    def report(self, exc: BaseException) -> str:
        line = describe(exc, self.target)
        if line != self.current or time.monotonic() - self.logged_at >= self.repeat:
            logger.warning(
                f"redis unavailable: {line}", extra={"component": self.process, "retrying": True}
            )
            self.logged_at = time.monotonic()
        self.current = line
        return line

    def recovered(self) -> None:
        if self.current is not None:
            logger.info("redis reachable again", extra={"component": self.process})
        self.current = None
