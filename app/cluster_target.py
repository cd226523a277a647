"""Where a Redis or Valkey Cluster is: `REDIS_CLUSTER_NODES`, read once, as `REDIS_URL` is
(`app/redis_target.py`), with the same credentials and TLS options.

Two forms: seed nodes alone (`host:port,host:port`), or one URL over them
(`rediss://user:password@host:port,host:port?ssl_ca_certs=/etc/ca.pem`). A cluster has only
database 0. Errors are one line naming the variable, and never quote a password.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from app.redis_target import Address, node_options, parse_address, url_hosts, url_options
from app.sources import ConfigError

VARIABLE = "REDIS_CLUSTER_NODES"
PORT = 6379


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    seeds: tuple[Address, ...]
    tls: bool = False
    # A data node's client options (credentials, TLS): out of `repr`, they hold passwords.
    node: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def secrets(self) -> list[str]:
        return [s for s in (self.node.get("password"), self.node.get("ssl_password")) if s]

    @property
    def where(self) -> str:
        tls = " (TLS)" if self.tls else ""
        return f"cluster of {','.join(map(str, self.seeds))}{tls}"


def parse_cluster_nodes(text: str) -> ClusterTarget:
    text = text.strip()
    if "://" not in text:
        hosts = [h.strip() for h in text.split(",") if h.strip()]
        return ClusterTarget(_seeds(hosts))
    try:
        parts = urlsplit(text)
    except ValueError:
        raise ConfigError(f"{VARIABLE} does not parse as a URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss"):
        raise ConfigError(f"{VARIABLE}: the scheme must be redis:// or rediss://")
    if parts.path.strip("/") not in ("", "0"):
        raise ConfigError(f"{VARIABLE}: a cluster has only database 0")
    tls = scheme == "rediss"
    options = url_options(parts.query, tls, VARIABLE)
    if options.pop("db", 0) != 0:
        raise ConfigError(f"{VARIABLE}: a cluster has only database 0")
    node = node_options(parts, options, tls)
    return ClusterTarget(_seeds(url_hosts(parts.netloc)), tls, node)


def _seeds(hosts: list[str]) -> tuple[Address, ...]:
    if not hosts:
        raise ConfigError(f"{VARIABLE}: name at least one node, as host:port,host:port")
    return tuple(dict.fromkeys(parse_address(h, PORT, VARIABLE) for h in hosts))
