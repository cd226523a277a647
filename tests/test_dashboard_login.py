"""The dashboard's login, from a guesser's side: failures are logged, a client that keeps
failing is locked out (429, Retry-After, its right password too), others are not, however
many addresses the guesser has, and memory stays bounded."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from app.logs import LineFormatter
from app.settings import Settings
from tests.conftest import AUTH
from workers.ops import login_brake
from workers.ops.dashboard import create_dashboard
from workers.ops.login_brake import FREE_FAILURES, MAX_LOCKOUT, LoginBrake

GUESSER = "203.0.113.7"
# Behind the login, and served without Redis.
PAGE = "/events/style.css"


@dataclass
class Clock:
    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Dashboard:
    client: FlaskClient
    brake: LoginBrake
    clock: Clock

    def login(self, password: str, address: str = GUESSER, user: str = AUTH[0]) -> TestResponse:
        return self.client.get(PAGE, auth=(user, password), environ_base={"REMOTE_ADDR": address})

    def fail(self, times: int, address: str = GUESSER) -> list[int]:
        return [self.login("a-guess", address).status_code for _ in range(times)]


@pytest.fixture
def make_dashboard(make_settings: Callable[..., Settings]) -> Callable[..., Dashboard]:
    def make(**brake: int) -> Dashboard:
        clock = Clock()
        made = LoginBrake(clock=clock, **brake)
        return Dashboard(create_dashboard(make_settings(), made).test_client(), made, clock)

    return make


@pytest.fixture
def dashboard(make_dashboard: Callable[..., Dashboard]) -> Dashboard:
    return make_dashboard()


def test_wrong_passwords_in_a_row_lock_the_client_out_with_429_and_retry_after(
    dashboard: Dashboard,
) -> None:
    assert dashboard.fail(FREE_FAILURES) == [401] * FREE_FAILURES
    refused = dashboard.login("another-guess")
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"
    assert "WWW-Authenticate" not in refused.headers


def test_after_the_lockout_the_right_password_opens_and_the_failures_are_forgotten(
    dashboard: Dashboard,
) -> None:
    dashboard.fail(FREE_FAILURES)
    dashboard.clock.now += 1
    assert dashboard.login(AUTH[1]).status_code == 200
    assert dashboard.fail(FREE_FAILURES) == [401] * FREE_FAILURES


def test_each_further_failure_doubles_the_lockout_up_to_its_cap(dashboard: Dashboard) -> None:
    dashboard.fail(FREE_FAILURES)
    waits = []
    for _ in range(11):
        refused = dashboard.login("a-guess")
        assert refused.status_code == 429
        wait = int(refused.headers["Retry-After"])
        waits.append(wait)
        dashboard.clock.now += wait
        assert dashboard.login("a-guess").status_code == 401  # one guess per opening
    assert waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
    assert max(waits) == MAX_LOCKOUT


def test_another_client_is_not_locked_out(dashboard: Dashboard) -> None:
    dashboard.fail(FREE_FAILURES + 1)
    assert dashboard.login(AUTH[1], address="198.51.100.20").status_code == 200


def test_addresses_of_one_ipv6_64_share_a_lockout(dashboard: Dashboard) -> None:
    for n in range(FREE_FAILURES):
        assert dashboard.login("a-guess", address=f"2001:db8::{n + 1:x}").status_code == 401
    assert dashboard.login("a-guess", address="2001:db8::ffff:1").status_code == 429
    assert dashboard.login("a-guess", address="2001:db8:0:1::1").status_code == 401


def test_requests_without_credentials_are_not_failures(dashboard: Dashboard) -> None:
    for _ in range(3 * FREE_FAILURES):
        response = dashboard.client.get(PAGE, environ_base={"REMOTE_ADDR": GUESSER})
        assert response.status_code == 401
    assert dashboard.login(AUTH[1]).status_code == 200


def test_failures_are_forgotten_an_hour_after_the_last(dashboard: Dashboard) -> None:
    dashboard.fail(FREE_FAILURES - 1)
    dashboard.clock.now += login_brake.FORGET_AFTER + 1
    assert dashboard.fail(FREE_FAILURES) == [401] * FREE_FAILURES


def test_a_guesser_rotating_addresses_cannot_grow_the_brakes_memory(
    make_dashboard: Callable[..., Dashboard],
) -> None:
    dashboard = make_dashboard(max_clients=50)
    for n in range(500):
        dashboard.login("a-guess", address=f"10.0.{n // 256}.{n % 256}")
    assert dashboard.brake.remembered == 50
    assert dashboard.login(AUTH[1], address="10.0.1.243").status_code == 200


def _failure_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "dashboard login failed"]


def test_each_failed_login_is_logged_without_the_password(
    dashboard: Dashboard, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(3):
        dashboard.login(f"guess-number-{n}", user="admin")
    records = _failure_lines(caplog)
    assert [r.__dict__["failures"] for r in records] == [1, 2, 3]
    for record in records:
        for look in ("json", "text"):
            line = LineFormatter(look).format(record)
            assert "guess-number" not in line
            assert GUESSER in line and "admin" in line


def test_the_user_name_a_guesser_sends_is_logged_escaped_and_shortened(
    dashboard: Dashboard, caplog: pytest.LogCaptureFixture
) -> None:
    hostile = "ops\x1b[2J\x1b]0;owned\x07\r\n\u202e" + "A" * 5000
    dashboard.login("a-guess", user=hostile)
    [record] = _failure_lines(caplog)
    for look in ("json", "text"):
        line = LineFormatter(look).format(record)
        assert not any(c in line for c in ("\x1b", "\x07", "\r", "\n", "\u202e"))
        assert len(line) < 600
    logged = json.loads(LineFormatter("json").format(record))["given_user"]
    assert logged.startswith("ops\\x1b[2J") and logged.endswith(f"({len(hostile)} characters)")


def test_a_password_typed_into_the_user_field_is_not_logged(
    dashboard: Dashboard, caplog: pytest.LogCaptureFixture
) -> None:
    dashboard.login("", user=AUTH[1])
    [record] = _failure_lines(caplog)
    for look in ("json", "text"):
        assert AUTH[1] not in LineFormatter(look).format(record)


def test_refusals_during_a_lockout_are_counted_in_the_next_failure_line(
    dashboard: Dashboard, caplog: pytest.LogCaptureFixture
) -> None:
    dashboard.fail(FREE_FAILURES)
    for _ in range(7):
        dashboard.login("a-guess")
    dashboard.clock.now += 1
    dashboard.login("a-guess")
    last = _failure_lines(caplog)[-1].__dict__
    assert (last["failures"], last["refused_while_locked"], last["locked_for"]) == (6, 7, 2)


# --- what a guesser cannot escape: the address is the brake's, not the request's ----


def test_rotating_user_names_does_not_escape_the_brake(dashboard: Dashboard) -> None:
    dashboard.fail(FREE_FAILURES)
    for user in (AUTH[0], "root", "admin"):
        refused = dashboard.login("another-guess", user=user)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "1"


def test_rotating_the_low_64_bits_does_not_escape_the_brake(dashboard: Dashboard) -> None:
    for n in range(FREE_FAILURES):
        assert dashboard.login("a-guess", address=f"2001:db8:1:2::{n + 1:x}").status_code == 401
    for low in ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2:1234:5678:9abc:def0"):
        assert dashboard.login("a-guess", address=low).status_code == 429
    assert dashboard.login("a-guess", address="2001:db8:1:3::1").status_code == 401


def test_an_ipv4_mapped_ipv6_address_is_braked_as_its_ipv4_address(dashboard: Dashboard) -> None:
    dashboard.fail(FREE_FAILURES, address="::ffff:" + GUESSER)
    assert dashboard.login("a-guess", address=GUESSER).status_code == 429


def test_spoofed_forwarding_headers_do_not_escape_the_brake(dashboard: Dashboard) -> None:
    for n in range(FREE_FAILURES + 3):
        spoofed = {
            "X-Forwarded-For": f"192.0.2.{n}",
            "X-Real-IP": f"192.0.2.{n}",
            "Forwarded": f"for=192.0.2.{n}",
        }
        response = dashboard.client.get(
            PAGE,
            auth=(AUTH[0], "a-guess"),
            headers=spoofed,
            environ_base={"REMOTE_ADDR": GUESSER},
        )
        assert response.status_code == (401 if n < FREE_FAILURES else 429)


# --- issue 37 item 3: no one can lock the operators out --------------------------------

OPERATOR = "198.51.100.200"


def _ipv6_in_one_48(n: int) -> str:
    """The n-th /64 of 2001:db8:4800::/48, with low bits that differ too."""
    return f"2001:db8:4800:{n:x}::{n % 9 + 1:x}"


def _ipv4(n: int) -> str:
    return f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"


def test_thousands_of_locked_out_addresses_do_not_lock_out_the_right_password(
    dashboard: Dashboard,
) -> None:
    # The attacker's side: 10,000 /64s of one /48 and 1,000 IPv4 addresses, five wrong
    # logins each: more than the brake remembers, every one of them locked out.
    addresses = [_ipv6_in_one_48(n) for n in range(10_000)] + [_ipv4(n) for n in range(1_000)]
    for address in addresses:
        for _ in range(FREE_FAILURES):
            dashboard.brake.failed(login_brake.client_key(address))
    assert dashboard.brake.remembered <= login_brake.MAX_CLIENTS
    # The operator's right password from a fresh address, while the attacker goes on.
    admitted, attacker = [], []
    for n in range(30):
        admitted.append(dashboard.login(AUTH[1], address=OPERATOR).status_code)
        attacker.append(dashboard.login("a-guess", address=addresses[-1 - n]).status_code)
    assert admitted == [200] * 30
    assert attacker == [429] * 30
    # A /64 the attacker has not used yet is a stranger like any other: its own record.
    assert dashboard.fail(FREE_FAILURES, address=_ipv6_in_one_48(20_000)) == [401] * FREE_FAILURES


def test_thousands_of_addresses_through_the_app_do_not_lock_out_the_right_password(
    make_dashboard: Callable[..., Dashboard],
) -> None:
    # The same attack end to end, with a brake that remembers 1,000 clients.
    dashboard = make_dashboard(max_clients=1_000)
    for n in range(2_000):
        dashboard.fail(FREE_FAILURES, address=_ipv6_in_one_48(n) if n % 2 else _ipv4(n))
    assert dashboard.brake.remembered <= 1_000
    admitted = []
    for n in range(30):
        admitted.append(dashboard.login(AUTH[1], address=OPERATOR).status_code)
        dashboard.fail(FREE_FAILURES, address=_ipv6_in_one_48(30_000 + n))
    assert admitted == [200] * 30


def test_a_locked_out_client_is_refused_its_right_password_too_until_the_lockout_ends(
    dashboard: Dashboard,
) -> None:
    # An address an operator shares with a guesser (a proxy, a NAT, a /64) is one client:
    # once locked out it is refused before its credentials are looked at, so a guesser
    # learns nothing from a refusal, and the operator waits out the lockout.
    dashboard.fail(FREE_FAILURES)
    wrong, right = dashboard.login("a-guess"), dashboard.login(AUTH[1])
    mapped = dashboard.login(AUTH[1], address="::ffff:" + GUESSER)
    for refused in (wrong, right, mapped):
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "1"
        assert "WWW-Authenticate" not in refused.headers
    assert right.get_data() == wrong.get_data()
    dashboard.clock.now += 1
    assert dashboard.login(AUTH[1]).status_code == 200
    # ... and the failures are forgotten.
    assert dashboard.fail(FREE_FAILURES) == [401] * FREE_FAILURES


def test_the_brakes_records_stay_bounded_and_the_oldest_goes_first() -> None:
    clock = Clock()
    brake = LoginBrake(clock=clock, max_clients=100)
    for n in range(1_000):
        clock.now += 1
        for _ in range(FREE_FAILURES):
            brake.failed(_ipv4(n))
    assert brake.remembered == 100
    # The newest are still locked out; the oldest were evicted, not pooled.
    assert brake.locked(_ipv4(999)) > 0
    assert brake.locked(_ipv4(0)) == 0
    assert brake.failed(_ipv4(0)) == login_brake.Failure(1, 0.0, 0)


def test_a_client_past_its_free_failures_gets_one_try_per_opening_however_concurrent() -> None:
    clock = Clock()
    brake = LoginBrake(clock=clock)
    for _ in range(FREE_FAILURES):
        brake.failed(GUESSER)
    clock.now += 1
    # Two requests at once as the lockout ends: the first may try, the second is refused
    # until the first is known wrong (the lockout then doubles) or right (it is unlocked).
    assert brake.locked(GUESSER) == 0
    assert brake.locked(GUESSER) == 2
    assert brake.failed(GUESSER) == login_brake.Failure(FREE_FAILURES + 1, 2.0, 1)
    clock.now += 2
    assert brake.locked(GUESSER) == 0
    brake.succeeded(GUESSER)
    assert brake.locked(GUESSER) == 0
    assert brake.remembered == 0


def _lockout_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "dashboard login locked out"]


def test_each_lockout_is_logged_once_without_secrets(
    dashboard: Dashboard, caplog: pytest.LogCaptureFixture
) -> None:
    address = "2001:db8:77:1::5"
    for n in range(FREE_FAILURES + 20):
        dashboard.login(f"guess-number-{n}", address=address, user=AUTH[1])
    [record] = _lockout_lines(caplog)
    assert (record.__dict__["client"], record.__dict__["locked_for"]) == ("2001:db8:77:1::/64", 1)
    assert record.levelno == logging.WARNING
    for look in ("json", "text"):
        line = LineFormatter(look).format(record)
        assert "guess-number" not in line and AUTH[1] not in line
    # The next opening's failure locks it out again, for twice as long: one more line.
    dashboard.clock.now += 1
    dashboard.login("a-guess", address=address)
    assert [r.__dict__["locked_for"] for r in _lockout_lines(caplog)] == [1, 2]
