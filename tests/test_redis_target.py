"""Where Redis is, read one way for every process: REDIS_URL (TCP, TLS, unix socket),
REDIS_SENTINELS, or redis+sentinel://; its errors are one line that never shows a password."""

from __future__ import annotations

import ssl

import pytest
from redis.exceptions import AuthenticationError, ConnectionError, NoPermissionError
from redis.sentinel import MasterNotFoundError

from app.connection import OPERATOR, sync_client
from app.redis_errors import describe
from app.redis_target import Address, parse_target
from app.settings import ConfigError, Settings
from workers.ops.common import where

SECRET = "s3cret-pass"


def load(**values: object) -> Settings:
    secret = "inbound-secret-0123456789"
    return Settings.load(_env_file=None, webhook_signing_secret=secret, **values)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://:{SECRET}@10.0.0.5:6390/2", "10.0.0.5:6390/2"),
        (f"rediss://app:{SECRET}@cache.example:6380/0", "cache.example:6380/0 (TLS)"),
        (f"unix://:{SECRET}@/run/redis/redis.sock?db=3", "unix:/run/redis/redis.sock, db 3"),
        (
            f"redis+sentinel://:{SECRET}@s1:26379,s2,s3:5000/orders/1",
            "primary 'orders' of sentinels s1:26379,s2:26379,s3:5000, db 1",
        ),
        (f"redis://:{SECRET}@a:1,b:2/0", "a:1,b:2 (a redis:// URL that does not parse)"),
        (f"redis:{SECRET}@h", "? (a redis:// URL that does not parse)"),
        # urllib refuses these itself (an unclosed bracket; a host that NFKC makes a path).
        (f"redis://:{SECRET}@[::1/0", "? (a redis:// URL that does not parse)"),
        (f"rediss://:{SECRET}@h\u2100st/0", "? (a rediss:// URL that does not parse)"),
    ],
)
def test_where_names_the_server_never_the_password_whatever_the_url(url: str, shown: str) -> None:
    assert where(url) == shown
    assert SECRET not in where(url)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (f"redis://:{SECRET}@[::1/0", "an IPv6 host is written in brackets, both of them"),
        (f"redis://:{SECRET}@h\u2100st/0", "it holds characters a URL cannot have"),
    ],
)
def test_a_url_urllib_refuses_is_a_config_error_naming_redis_url(url: str, said: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_target(url)
    assert str(error.value).startswith(f"REDIS_URL does not parse: {said}")
    assert SECRET not in str(error.value)


def test_sentinels_in_their_own_variable_and_in_the_url_give_the_same_target() -> None:
    separate = load(
        redis_url=f"redis://:{SECRET}@ignored:1/4",
        redis_sentinels="s1:26379, s2:26380",
        redis_sentinel_master="orders",
        redis_sentinel_password="sentinel-secret",
    ).redis_target
    single = parse_target(
        f"redis+sentinel://:{SECRET}@s1,s2:26380/orders/4",
        sentinel_password="sentinel-secret",
    )
    assert separate == single
    assert separate.sentinels == (Address("s1", 26379), Address("s2", 26380))
    assert (
        separate.node["password"] == SECRET and separate.sentinel["password"] == "sentinel-secret"
    )
    assert SECRET not in repr(separate) and SECRET not in repr(
        load(redis_url=f"redis://:{SECRET}@h/0")
    )


def test_an_ipv6_address_in_brackets_is_a_host_and_a_port() -> None:
    assert parse_target("redis://[::1]:6390/0").address == Address("::1", 6390)
    assert parse_target("redis://[fe80::2]/0").address == Address("fe80::2", 6379)


def test_tls_options_go_to_the_data_nodes_and_the_sentinels(tmp_path: object) -> None:
    target = parse_target(
        "rediss+sentinel://s1/m?ssl_cert_reqs=none&ssl_check_hostname=false",
        sentinel_username="watcher",
    )
    assert target.tls and target.node["ssl"] and target.sentinel["ssl"]
    assert target.sentinel["ssl_cert_reqs"] == "none" and target.sentinel["username"] == "watcher"
    assert target.node["ssl_check_hostname"] is False


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"redis_url": "http://h/0"}, "REDIS_URL: the scheme must be"),
        ({"redis_url": f"redis://:{SECRET}@a:1,b:2/0"}, "REDIS_URL names several hosts"),
        ({"redis_url": "redis://h/0?sslca=/x"}, "REDIS_URL: unknown option 'sslca'"),
        ({"redis_url": "redis://h/0?ssl_ca_certs=/x"}, "ssl_ca_certs needs a rediss:// URL"),
        ({"redis_url": "rediss://h/0?ssl_ca_certs=/nope.pem"}, "ssl_ca_certs '/nope.pem' does not"),
        ({"redis_url": "redis://h/zero"}, "the database (after the last /) must be a number"),
        ({"redis_url": "unix://h/0", "redis_sentinels": "s:1"}, "REDIS_SENTINELS needs a redis://"),
        ({"redis_sentinels": "s:port"}, "REDIS_SENTINELS: the port of s must be a number"),
        ({"redis_url": "redis+sentinel://s/m", "redis_sentinels": "s:1"}, "set only one"),
        ({"redis_url": "redis+sentinel:///m"}, "redis+sentinel:// needs at least one sentinel"),
        ({"redis_url": "unix://"}, "unix:// needs the socket's path"),
        ({"redis_sentinels": ":26379"}, "REDIS_SENTINELS: expected host:port, got an empty host"),
        ({"redis_url": "rediss://h/0?ssl_cert_reqs=maybe"}, "ssl_cert_reqs must be one of"),
        ({"redis_url": "redis://h/0?db=two"}, "REDIS_URL: db must be a number"),
        (
            {"webhook_replica_acks": 1, "webhook_replica_ack_timeout": 2, "webhook_ack_timeout": 2},
            "must be shorter",
        ),
        ({"webhook_replica_ack_mode": "sync"}, "WEBHOOK_REPLICA_ACK_MODE"),
    ],
)
def test_a_bad_redis_setting_is_one_line_naming_the_variable(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        load(**values)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert SECRET not in str(error.value)


def test_redis_errors_are_one_line_that_says_what_to_check_without_the_password() -> None:
    target = parse_target(f"rediss://u:{SECRET}@h:1/0", ["s:2"], "m", None, "sentinel-pass")
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    verify.verify_message = "self-signed certificate in certificate chain"
    try:
        try:
            raise verify
        except ssl.SSLError:
            raise ConnectionError("Error 1 connecting to h:1.") from None
    except ConnectionError as exc:
        refused = exc
    refused.__context__ = verify
    cases = {
        refused: "give its CA in REDIS_URL's ssl_ca_certs",
        AuthenticationError(f"WRONGPASS {SECRET}"): "wrong user or password in REDIS_URL",
        MasterNotFoundError("No master found for 'm' : <x> - AuthenticationError('invalid')"): (
            "the sentinels refused the credentials (REDIS_SENTINEL_USERNAME"
        ),
        MasterNotFoundError("No master found for 'm'"): "the sentinels name no reachable primary",
        NoPermissionError("this user has no permissions to run the 'eval' command"): (
            "the Redis user lacks a permission"
        ),
        ConnectionError("Error 111 connecting to h:1. Connection refused."): "connection refused",
    }
    for exc, expected in cases.items():
        line = describe(exc, target)
        assert expected in line and line.startswith("primary 'm' of sentinels s:2")
        assert SECRET not in line and "sentinel-pass" not in line and "\n" not in line


def test_every_process_gets_a_client_that_asks_the_sentinels() -> None:
    settings = load(redis_url="redis://:p@/2", redis_sentinels="127.0.0.1:1")
    client = sync_client(settings, OPERATOR)
    pool = client.connection_pool
    assert type(pool).__name__ == "SentinelConnectionPool" and pool.service_name == "mymaster"
    assert pool.connection_kwargs["db"] == 2
