"""Which Redis every process talks to, read once from the settings: one Redis, or the primary
that Sentinel names.

Three ways to say it, parsed here and nowhere else, so the receiver, the worker, its
scheduler, the dashboard and the `webhooks` command cannot disagree:
- `REDIS_URL=redis://[[user]:password@]host[:port][/db][?options]`, `rediss://...` (TLS) or
  `unix://[[user]:password@]/path[?db=N]`;
- `REDIS_SENTINELS=host:port,...` with `REDIS_SENTINEL_MASTER`: the primary is asked of the
  sentinels; REDIS_URL then gives only the scheme, credentials, database and options of the
  data nodes (its host is not used);
- `REDIS_URL=redis+sentinel://[[user]:password@]host[:port][,host[:port]...][/master[/db]]`
  (`rediss+sentinel://` for TLS): the same, in one variable, as rq-dashboard reads it (the
  credentials are the data nodes'; a port defaults to 26379).
Sentinel credentials come from REDIS_SENTINEL_USERNAME / REDIS_SENTINEL_PASSWORD. With TLS,
the sentinels are reached over TLS too, with the same certificates.
Errors are one line naming the variable, and never quote a password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from app.sources import ConfigError

SENTINEL_PORT = 26379
SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel")
# The options a URL may carry after `?`: TLS, the database, the protocol. Anything else is
# refused by name (redis-py would pass it on and fail later, with the URL in a traceback).
TLS_FILES = ("ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile")
TLS_OPTIONS = (*TLS_FILES, "ssl_cert_reqs", "ssl_check_hostname", "ssl_ciphers", "ssl_password")
OPTIONS = ("db", "protocol", *TLS_OPTIONS)
CERT_REQS = ("required", "optional", "none")


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class RedisTarget:
    """A parsed target. `node` holds the keyword arguments of a redis-py client for a data
    node (credentials, database, TLS), `sentinel` those of a sentinel: both stay out of
    `repr`, since they hold passwords."""

    address: Address | None = None  # one Redis over TCP
    unix_path: str | None = None  # one Redis over a unix socket
    sentinels: tuple[Address, ...] = ()  # or the primary that these sentinels name
    master: str = ""
    tls: bool = False
    db: int = 0
    node: dict[str, Any] = field(default_factory=dict, repr=False)
    sentinel: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def secrets(self) -> list[str]:
        """The passwords, so that an error message quoting one can be scrubbed."""
        found = [self.node.get("password"), self.node.get("ssl_password")]
        found.append(self.sentinel.get("password"))
        return [s for s in found if s]

    @property
    def where(self) -> str:
        """Where, for messages: addresses, database and TLS; never a credential."""
        tls = " (TLS)" if self.tls else ""
        if self.sentinels:
            hosts = ",".join(map(str, self.sentinels))
            return f"primary {self.master!r} of sentinels {hosts}, db {self.db}{tls}"
        if self.unix_path is not None:
            return f"unix:{self.unix_path}, db {self.db}"
        return f"{self.address}/{self.db}{tls}"


def parse_target(
    redis_url: str,
    sentinels: list[str] | None = None,
    master: str = "mymaster",
    sentinel_username: str | None = None,
    sentinel_password: str | None = None,
) -> RedisTarget:
    url = redis_url.strip()
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigError(
            "REDIS_URL: the scheme must be redis://, rediss://, unix://, redis+sentinel:// "
            "or rediss+sentinel://"
        )
    tls = scheme.startswith("rediss")
    options = url_options(parts.query, tls)
    node = node_options(parts, options, tls)
    hosts = url_hosts(parts.netloc)
    path = unquote(parts.path)
    sentinel_kwargs = _sentinel_kwargs(node, tls, sentinel_username, sentinel_password)
    if scheme.endswith("+sentinel"):
        if sentinels:
            raise ConfigError("REDIS_SENTINELS and a redis+sentinel:// REDIS_URL: set only one")
        if not hosts:
            raise ConfigError("REDIS_URL: redis+sentinel:// needs at least one sentinel host")
        name, _, db_part = path.strip("/").partition("/")
        db = _db(db_part or str(options.get("db", "0")))
        return RedisTarget(
            sentinels=tuple(parse_address(h, SENTINEL_PORT, "REDIS_URL") for h in hosts),
            master=name or master,
            tls=tls,
            db=db,
            node={**node, "db": db},
            sentinel=sentinel_kwargs,
        )
    db = _db(str(options["db"]) if "db" in options else path.strip("/") or "0", scheme)
    if sentinels:
        if scheme == "unix":
            raise ConfigError("REDIS_SENTINELS needs a redis:// or rediss:// REDIS_URL")
        addresses = tuple(
            parse_address(s.strip(), SENTINEL_PORT, "REDIS_SENTINELS") for s in sentinels
        )
        return RedisTarget(
            sentinels=addresses,
            master=master,
            tls=tls,
            db=db,
            node={**node, "db": db},
            sentinel=sentinel_kwargs,
        )
    if scheme == "unix":
        if not path:
            raise ConfigError("REDIS_URL: unix:// needs the socket's path (unix:///run/redis.sock)")
        return RedisTarget(unix_path=path, db=db, node={**node, "db": db})
    if len(hosts) > 1:
        raise ConfigError(
            "REDIS_URL names several hosts: list sentinels in REDIS_SENTINELS, or use "
            "redis+sentinel://host:port,host:port/master"
        )
    address = parse_address(hosts[0] if hosts else "localhost", 6379, "REDIS_URL")
    return RedisTarget(address=address, tls=tls, db=db, node={**node, "db": db})


def _split(url: str) -> SplitResult:
    """The URL's parts, or one line naming REDIS_URL: urllib's own errors are a traceback
    (an unclosed `[`), and one of them quotes the host part, password included."""
    try:
        return urlsplit(url)
    except ValueError as exc:
        if "IPv6" in str(exc):
            raise ConfigError(
                "REDIS_URL does not parse: an IPv6 host is written in brackets, both of "
                "them, as in redis://[::1]:6379/0"
            ) from None
        raise ConfigError(
            "REDIS_URL does not parse: it holds characters a URL cannot have"
        ) from None


def node_options(parts: SplitResult, options: dict[str, Any], tls: bool) -> dict[str, Any]:
    """A data node's client options from its URL: the options but the database, the user
    and password, and TLS."""
    node: dict[str, Any] = {k: v for k, v in options.items() if k != "db"}
    if parts.username:
        node["username"] = unquote(parts.username)
    if parts.password:
        node["password"] = unquote(parts.password)
    if tls:
        node["ssl"] = True
    return node


def url_hosts(netloc: str) -> list[str]:
    hostspec = netloc.rpartition("@")[2]
    return [h.strip() for h in hostspec.split(",") if h.strip()]


def parse_address(text: str, default_port: int, variable: str) -> Address:
    if text.startswith("["):  # [::1]:6379
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    if not host:
        raise ConfigError(f"{variable}: expected host:port, got an empty host")
    try:
        port = int(port_text) if port_text else default_port
    except ValueError:
        raise ConfigError(f"{variable}: the port of {host} must be a number") from None
    if not 0 < port < 65536:
        raise ConfigError(f"{variable}: the port of {host} must be from 1 to 65535")
    return Address(host, port)


def _db(text: str, scheme: str = "redis") -> int:
    if scheme == "unix" and not text.isdigit():
        text = "0"  # a unix URL's path is the socket, not the database
    if not text.isdigit():
        raise ConfigError("REDIS_URL: the database (after the last /) must be a number")
    return int(text)


def url_options(query: str, tls: bool, variable: str = "REDIS_URL") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, values in parse_qs(query, keep_blank_values=True).items():
        value = values[-1]
        if name not in OPTIONS:
            raise ConfigError(
                f"{variable}: unknown option {name!r} after ? (known: {', '.join(OPTIONS)})"
            )
        if name in TLS_OPTIONS and not tls:
            raise ConfigError(f"{variable}: {name} needs a rediss:// URL (TLS)")
        if name in TLS_FILES and not Path(value).exists():
            raise ConfigError(f"{variable}: {name} {value!r} does not exist")
        if name == "ssl_cert_reqs" and value not in CERT_REQS:
            raise ConfigError(f"{variable}: ssl_cert_reqs must be one of {', '.join(CERT_REQS)}")
        if name in ("db", "protocol"):
            if not value.isdigit():
                raise ConfigError(f"{variable}: {name} must be a number")
            found[name] = int(value)
        elif name == "ssl_check_hostname":
            found[name] = value.lower() in ("1", "true", "yes", "on")
        else:
            found[name] = value
    return found


def _sentinel_kwargs(
    node: dict[str, Any], tls: bool, username: str | None, password: str | None
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if username:
        kwargs["username"] = username
    if password:
        kwargs["password"] = password
    if tls:
        kwargs.update({k: v for k, v in node.items() if k.startswith("ssl")})
    return kwargs


def safe_where(url: str) -> str:
    """Where a URL points, for a message, whatever the URL holds (several hosts, a unix
    socket, a typo): parsed when it parses, else its scheme alone. Never a credential."""
    try:
        return parse_target(url).where
    except ConfigError:
        try:
            parts = urlsplit(url.strip())
        except ValueError:  # urllib's refusal (an unclosed `[`): not even the hosts
            scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*(?=://)", url.strip())
            return f"? (a {scheme.group() if scheme else '?'}:// URL that does not parse)"
        # Only the hosts: a mangled URL may carry its password anywhere else.
        hosts = ",".join(url_hosts(parts.netloc)) or "?"
        return f"{hosts} (a {parts.scheme or '?'}:// URL that does not parse)"
