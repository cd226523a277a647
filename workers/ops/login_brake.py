"""A brake on guessing the dashboard's password: per client, after a few failures.

Without it, HTTP Basic answers a wrong password at once, about 1,500 guesses a second, and
nothing is logged. With it:
- a client is its IPv4 address, or its IPv6 /64 (one host usually holds a whole /64, so
  rotating the low 64 bits changes nothing); an IPv4-mapped IPv6 address is its IPv4 one.
  It is the connection's address, never a forwarding header (the guesser writes those);
- each failed login writes one log line: the client's address, the user name it gave
  (escaped and shortened: it is the guesser's text), how many failures in a row; never
  the password;
- after FREE_FAILURES failures in a row, a client is locked out: every login it tries is
  answered 429 with Retry-After before its credentials are looked at, so the right
  password is refused too until the lockout ends, and a guesser learns nothing from a
  refusal (were the right one let in, a lockout would not slow a guesser at all). The
  refusals are counted and folded into the client's next failure line (a guesser cannot
  flood the log). Each failure after a lockout doubles the next one, up to MAX_LOCKOUT;
  each lockout is logged once, as it begins: the client and its length. The right login
  forgets the client's failures;
- a client past its free failures is locked again as it is let try (as if the try failed,
  until it is known right or wrong), so concurrent requests cannot slip several guesses
  into one opening;
- the refusal is immediate, never a sleep: waitress serves the dashboard with 4 threads,
  and a guesser whose requests slept in them would keep the operators out;
- memory is bounded: at most MAX_CLIENTS clients are remembered, the least recently seen
  evicted to make room (locked out or not), and a client unseen for FORGET_AFTER seconds
  is forgotten. Every client has a record of its own, none is shared by strangers: a
  client the brake does not know is never refused, so a guesser cannot lock out the
  operators from addresses they do not share with it, however many it has. An operator
  who does share one (a NAT, a proxy, an IPv6 /64) waits out its lockout: MAX_LOCKOUT at
  most.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from app.logs import logger, terminal_text

FREE_FAILURES = 5
FIRST_LOCKOUT = 1.0  # seconds, after the FREE_FAILURES-th failure; doubled by each further
MAX_LOCKOUT = 300.0
FORGET_AFTER = 3600.0
MAX_CLIENTS = 10_000
# A user name in a log line: the guesser's text, so escaped and at most this long.
MAX_LOGGED_USER = 64


def client_key(address: str | None) -> str:
    """Whose failures these are: the IPv4 address, or the /64 network of an IPv6 one."""
    text = (address or "").strip()
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        return text[:100]  # a unix socket or a proxy's name: one client
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


def lockout(failures: int) -> float:
    """Seconds a client is locked out after `failures` failures in a row."""
    if failures < FREE_FAILURES:
        return 0.0
    doublings = min(failures - FREE_FAILURES, 30)  # bounded: no float overflow
    return min(FIRST_LOCKOUT * float(2**doublings), MAX_LOCKOUT)


@dataclass(slots=True)
class _Client:
    failures: int = 0
    last_seen: float = 0.0
    locked_until: float = 0.0
    refused: int = 0  # wrong logins answered 429 since the last failure line


@dataclass(frozen=True, slots=True)
class Failure:
    """A wrong login counted: the client's failures in a row, the lockout this one begins
    (0 within the free failures), the wrong logins refused since the previous one."""

    failures: int
    locked_for: float
    refused_while_locked: int


class LoginBrake:
    """Asked whether a client is locked out (`locked`) before its credentials are looked
    at, then told whether they were wrong (`failed`) or right (`succeeded`)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        if max_clients < 1:
            raise ValueError("max_clients must be at least 1")
        self.clock = clock
        self.max_clients = max_clients
        # Least recently seen first.
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        # waitress's threads share it.
        self._lock = threading.Lock()

    @property
    def remembered(self) -> int:
        """How many clients' failures are kept (not `__len__`: an empty brake is no less a
        brake, and would be falsy)."""
        return len(self._clients)

    def locked(self, client: str) -> float:
        """0 when `client` may try a login now, else the seconds its lockout has left (the
        refusal is counted for its next failure line). A client past its free failures is
        locked again as it is let try, as if this try failed: `failed` then counts it,
        `succeeded` unlocks it, and its concurrent tries are refused meanwhile."""
        now = self.clock()
        with self._lock:
            self._forget(now)
            if client not in self._clients:
                return 0.0  # a stranger: no record made for it, none shared
            entry = self._seen(client, now)
            if entry.locked_until > now:
                entry.refused += 1
                return entry.locked_until - now
            if entry.failures >= FREE_FAILURES:
                entry.locked_until = now + lockout(entry.failures + 1)
            return 0.0

    def failed(self, client: str) -> Failure:
        """A wrong login from `client`, counted: its failures in a row, the lockout this one
        begins, the refusals since its previous failure."""
        now = self.clock()
        with self._lock:
            entry = self._seen(client, now)
            entry.failures += 1
            locked_for = lockout(entry.failures)
            entry.locked_until = now + locked_for if locked_for else 0.0
            refused, entry.refused = entry.refused, 0
            return Failure(entry.failures, locked_for, refused)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)

    def _seen(self, client: str, now: float) -> _Client:
        """The client's record, now its most recent: a new one if it had none or was
        forgotten, the least recently seen evicted to make room."""
        self._forget(now)
        entry = self._clients.get(client)
        if entry is None:
            while len(self._clients) >= self.max_clients:
                self._clients.popitem(last=False)
            entry = self._clients[client] = _Client()
        else:
            self._clients.move_to_end(client)
        entry.last_seen = now
        return entry

    def _forget(self, now: float) -> None:
        """Drops the clients unseen for FORGET_AFTER seconds (oldest first: it stops at the
        first one seen since)."""
        while self._clients:
            oldest = next(iter(self._clients.values()))
            if now - oldest.last_seen <= FORGET_AFTER:
                return
            self._clients.popitem(last=False)


def shown_user(given: str, redact: Callable[[str], str]) -> str:
    """A user name from a failed login, fit for a log line: a secret typed into the user
    field is blanked out, control characters escaped, the length bounded."""
    text = terminal_text(redact(given))
    if len(text) > MAX_LOGGED_USER:
        text = f"{text[:MAX_LOGGED_USER]}… ({len(given)} characters)"
    return text


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))


def log_failure(address: str | None, user: str, failure: Failure) -> None:
    logger.warning(
        "dashboard login failed",
        extra={
            "client": terminal_text(address or "")[:100],
            "given_user": user,
            "failures": failure.failures,
            "locked_for": math.ceil(failure.locked_for),
            "refused_while_locked": failure.refused_while_locked,
        },
    )


def log_lockout(client: str, failure: Failure) -> None:
    """One line as a lockout begins: the client as the brake keys it (an address or an
    IPv6 /64) and for how long; never a credential, the user name neither (it could be a
    password typed into the wrong field)."""
    logger.warning(
        "dashboard login locked out",
        extra={
            "client": terminal_text(client)[:100],
            "locked_for": math.ceil(failure.locked_for),
            "failures": failure.failures,
        },
    )
