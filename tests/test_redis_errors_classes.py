"""Every kind of Redis failure a process meets is one line naming what to check: a TLS
client at a plain port, sentinels that do not answer, a timeout, a failover, a refused
command, a batch the replicas did not acknowledge."""

from __future__ import annotations

import ssl
from collections.abc import Callable

import pytest
from redis import Redis
from redis.exceptions import ConnectionError, ResponseError, TimeoutError
from redis.sentinel import MasterNotFoundError

from app.connection import PROBE, sync_client
from app.redis_errors import describe
from app.replication import NotReplicated
from app.settings import Settings
from workers.dev.redis_server import free_port


def raised(call: Callable[[], object]) -> BaseException:
    with pytest.raises(Exception) as error:
        call()
    return error.value


def test_sentinels_that_do_not_answer_are_said_to_be_down(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(redis_sentinels=f"127.0.0.1:{free_port()}")
    client = sync_client(settings, PROBE)
    line = describe(raised(client.ping), settings.redis_target)
    client.close()
    assert "no sentinel answered (REDIS_SENTINELS" in line


def test_a_command_redis_refuses_is_named_with_its_reason(redis: Redis) -> None:
    redis.set("a-string", "x")
    line = describe(raised(lambda: redis.lpush("a-string", "y")))
    assert line.startswith("redis: Redis refused a command: WRONGTYPE")


def test_too_few_replica_acknowledgements_are_one_line_with_the_count() -> None:
    line = describe(NotReplicated("0 of WEBHOOK_REPLICA_ACKS=1 replicas acknowledged\nmore"))
    assert line == "redis: NotReplicated: 0 of WEBHOOK_REPLICA_ACKS=1 replicas acknowledged"


def tls_failure(reason: str) -> ConnectionError:
    """What redis-py raises on a failed handshake: the SSLError only in the context."""
    cause = ssl.SSLError(1, f"[SSL: {reason}] {reason.lower()}")
    cause.reason = reason
    failure = ConnectionError("Error 1 connecting to h:1.")
    failure.__context__ = cause
    return failure


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        # A TLS client at a plain port (OpenSSL 1.1 and 3 word it differently).
        (tls_failure("WRONG_VERSION_NUMBER"), "the server does not speak TLS there"),
        (tls_failure("RECORD_LAYER_FAILURE"), "the server does not speak TLS there"),
        # A server with tls-auth-clients yes that does not trust the client (or gets none).
        (tls_failure("TLSV13_ALERT_CERTIFICATE_REQUIRED"), "it wants a client certificate"),
        (tls_failure("UNEXPECTED_EOF_WHILE_READING"), "TLS handshake failed (unexpected eof"),
        (TimeoutError("Timeout reading from socket"), "no answer in time (Redis busy"),
        # redis-py 8's words for sentinels that all timed out.
        (
            MasterNotFoundError("No master found for 'm' : <Redis> - network:TimeoutError"),
            "no sentinel answered (REDIS_SENTINELS",
        ),
        # redis-py's Sentinel connection, finding its primary demoted during a failover.
        (ConnectionError("The previous master is now a slave"), "the primary was demoted"),
        (ConnectionError("Error -2 connecting to nowhere:1. Name unknown."), "cannot connect"),
        (ResponseError(""), "Redis refused a command: no detail"),
    ],
)
def test_each_redis_failure_names_what_to_check(exc: BaseException, expected: str) -> None:
    assert expected in describe(exc)
