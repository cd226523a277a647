"""A brake on guessing the dashboard's password: per client address, after a few failures.

Without it, HTTP Basic answers a wrong password at once, about 1,500 guesses a second, and
nothing is logged. With it:
- each failed login writes one log line: the client's address, the user name it gave
  (escaped and shortened: it is the guesser's text), how many failures in a row; never
  the password;
- after FREE_FAILURES failures in a row, a client is locked out: every login it tries is
  answered 429 with Retry-After, without looking at the credentials, so the right password
  is refused too until the lockout ends (the standard brake: were it accepted, a lockout
  would not slow a guesser down at all). Each further failure doubles the lockout, up to
  MAX_LOCKOUT; a successful login from that client forgets its failures;
- the refusal is immediate, never a sleep: waitress serves the dashboard with 4 threads,
  and a guesser whose requests slept in them would lock every operator out;
- a locked-out client's next attempt locks it again before its password is compared, so
  concurrent requests cannot slip several guesses into one opening;
- memory is bounded: at most MAX_CLIENTS addresses are remembered and a client's failures
  are forgotten FORGET_AFTER seconds after its last. To make room, a forgotten record goes
  first, then the least recent one still within its free failures; never one past them,
  as dropping it would hand its guesser fresh tries (a /48 holds 65,536 /64s). When every
  record is past them, the addresses not remembered share one record, so a guesser with
  more addresses than MAX_CLIENTS is braked as one. An IPv6 client counts by its /64,
  which one host usually holds whole.
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
    last_failure: float = 0.0
    locked_until: float = 0.0
    refused: int = 0  # attempts answered 429 since the last failure line


@dataclass(frozen=True, slots=True)
class Failure:
    failures: int
    locked_for: float
    refused_while_locked: int


class LoginBrake:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.clock = clock
        self.max_clients = max_clients
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        # Shared by the addresses not remembered while every record is past its free tries.
        self._overflow = _Client()
        # waitress's threads share it.
        self._lock = threading.Lock()

    @property
    def remembered(self) -> int:
        """How many clients' failures are kept (not `__len__`: an empty brake is no less a
        brake, and would be falsy)."""
        return len(self._clients)

    def admit(self, client: str) -> float:
        """0 when `client` may try a login now, else the seconds its lockout has left. A
        client past its free failures is locked again as it is admitted (as if this try
        failed): a success unlocks it, and concurrent tries wait their turn."""
        now = self.clock()
        with self._lock:
            entry = self._current(client, now)
            if entry is None:
                if self._room(now):
                    return 0.0
                entry = self._shared(now)
            if entry.locked_until > now:
                entry.refused += 1
                return entry.locked_until - now
            if entry.failures >= FREE_FAILURES:
                entry.locked_until = now + lockout(entry.failures + 1)
            return 0.0

    def failed(self, client: str) -> Failure:
        now = self.clock()
        with self._lock:
            entry = self._current(client, now)
            if entry is None and self._room(now):
                entry = self._clients[client] = _Client()
            if entry is None:
                entry = self._shared(now)
            else:
                self._clients.move_to_end(client)
            entry.failures += 1
            entry.last_failure = now
            locked_for = lockout(entry.failures)
            entry.locked_until = now + locked_for if locked_for else 0.0
            refused, entry.refused = entry.refused, 0
            return Failure(entry.failures, locked_for, refused)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)

    def _current(self, client: str, now: float) -> _Client | None:
        """The client's record, unless its failures are old enough to forget."""
        entry = self._clients.get(client)
        if entry is not None and now - entry.last_failure > FORGET_AFTER:
            del self._clients[client]
            return None
        return entry

    def _room(self, now: float) -> bool:
        """Room for one more record: a forgotten one goes first, then the least recent one
        still within its free failures; never one past them (see the module's docstring)."""
        if len(self._clients) < self.max_clients:
            return True
        for key, entry in self._clients.items():
            if now - entry.last_failure > FORGET_AFTER or entry.failures < FREE_FAILURES:
                del self._clients[key]
                return True
        return False

    def _shared(self, now: float) -> _Client:
        if now - self._overflow.last_failure > FORGET_AFTER:
            self._overflow = _Client()
        return self._overflow


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
