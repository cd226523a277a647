"""The one client that fetches keys and certificates for verifiers (AWS SNS, Plaid).

Three guards: an allow-list of origins (`WEBHOOK_FETCH_ALLOW`; a signed message names the
URL of its own certificate, so the host must be one we trust before anything is fetched),
a timeout (`WEBHOOK_FETCH_TIMEOUT`), and a cache of what was parsed (a key is fetched once
per hour, not per request; concurrent requests for one key share one fetch). A failure to
fetch is a 503, so the provider retries; it is never a 500, and never an acceptance. A key
the server says does not exist (4xx) is `KeyRefused`, which verifiers turn into a 401; it
is remembered for a minute so a flood of made-up key ids cannot become a flood of fetches.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import httpx

from app.errors import WebhookError
from app.sources import ConfigError

if TYPE_CHECKING:
    from app.settings import Settings

T = TypeVar("T")
MAX_BYTES = 64 * 1024
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
# An AWS region (us-east-1, us-gov-west-1, cn-north-1): never `s3` or `s3-us-west-2`, so
# an S3 bucket named `sns` cannot pass for SNS's certificate host.
_REGION = r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}"


class KeyUnavailable(WebhookError):
    """A key or certificate could not be fetched: nothing was accepted, the sender retries."""

    status_code = 503
    reason = "key_unavailable"


class KeyRefused(Exception):
    """The key server answered that this key or URL does not exist (4xx)."""


@dataclass(frozen=True, slots=True)
class Fetch:
    url: str
    # POSTed as JSON when set (Plaid's key endpoint); a GET otherwise.
    json: Mapping[str, str] | None = None


@dataclass(slots=True)
class _Entry:
    expires: float
    value: object
    refused: bool


def compile_origin(entry: str) -> re.Pattern[str]:
    scheme, separator, rest = entry.strip().lower().partition("://")
    host, _, port = rest.partition(":")
    if (
        scheme not in ("http", "https")
        or not separator
        or not host
        or any(c in rest for c in "/?#@")
        or not (port in ("", "*") or port.isdigit())
    ):
        raise ConfigError(
            f"WEBHOOK_FETCH_ALLOW: {entry!r} is not scheme://host[:port] "
            "('*' is one DNS label or any port, '{region}' an AWS region)"
        )
    labels = [
        _LABEL if label == "*" else _REGION if label == "{region}" else re.escape(label)
        for label in host.split(".")
    ]
    port_pattern = r"(?::[0-9]{1,5})?" if port == "*" else (f":{port}" if port else "")
    return re.compile(f"{scheme}://" + r"\.".join(labels) + port_pattern)


class KeyFetcher:
    def __init__(
        self,
        allow: Sequence[str],
        timeout: float,
        *,
        ttl: float = 3600.0,
        refused_ttl: float = 60.0,
        capacity: int = 256,
    ) -> None:
        self.origins = tuple(compile_origin(entry) for entry in allow)
        self.timeout = timeout
        self.ttl = ttl
        self.refused_ttl = refused_ttl
        self.capacity = capacity
        self._cache: dict[str, _Entry] = {}
        self._inflight: dict[str, asyncio.Future[Any]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyFetcher:
        return cls(settings.webhook_fetch_allow, settings.webhook_fetch_timeout)

    def allowed(self, url: str) -> bool:
        """True when the URL's origin is on the allow-list (no user info, no odd port)."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return False
        if "@" in parts.netloc or not parts.hostname:
            return False
        origin = f"{parts.scheme}://{parts.hostname}" + (f":{port}" if port else "")
        return any(pattern.fullmatch(origin) for pattern in self.origins)

    async def load(self, key: str, fetch: Fetch, parse: Callable[[bytes], T]) -> T:
        """The parsed key for `key`, from the cache or fetched (once, however many ask)."""
        entry = self._cache.get(key)
        if entry is not None and entry.expires > time.monotonic():
            if entry.refused:
                raise KeyRefused(key)
            return cast(T, entry.value)
        future = self._inflight.get(key)
        if future is None:
            future = asyncio.ensure_future(self._fetch_and_parse(fetch, parse))
            self._inflight[key] = future
            future.add_done_callback(lambda done: self._settle(key, done))
        return cast(T, await asyncio.shield(future))

    async def _fetch_and_parse(self, fetch: Fetch, parse: Callable[[bytes], T]) -> T:
        raw = await self.fetch(fetch)
        try:
            return parse(raw)
        except ValueError:
            raise KeyUnavailable("the fetched key or certificate could not be read") from None

    def _settle(self, key: str, done: asyncio.Future[Any]) -> None:
        self._inflight.pop(key, None)
        if done.cancelled():
            return
        error = done.exception()
        if error is None:
            self._remember(key, _Entry(time.monotonic() + self.ttl, done.result(), False))
        elif isinstance(error, KeyRefused):
            self._remember(key, _Entry(time.monotonic() + self.refused_ttl, None, True))

    def _remember(self, key: str, entry: _Entry) -> None:
        self._cache[key] = entry
        while len(self._cache) > self.capacity:
            del self._cache[next(iter(self._cache))]

    async def fetch(self, fetch: Fetch) -> bytes:
        """The body of a 200 answer; `KeyRefused` on a 4xx, `KeyUnavailable` otherwise."""
        if not self.allowed(fetch.url):
            raise KeyRefused("URL not on WEBHOOK_FETCH_ALLOW")
        try:
            async with asyncio.timeout(self.timeout):
                return await self._get(fetch)
        except TimeoutError:
            raise KeyUnavailable("key server did not answer in time; retry later") from None
        except httpx.HTTPError as exc:
            raise KeyUnavailable(
                f"key server unreachable ({type(exc).__name__}); retry later"
            ) from None

    async def _get(self, fetch: Fetch) -> bytes:
        method = "GET" if fetch.json is None else "POST"
        async with (
            httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client,
            client.stream(method, fetch.url, json=fetch.json) as response,
        ):
            if 400 <= response.status_code < 500:
                raise KeyRefused(f"key server answered {response.status_code}")
            if response.status_code != 200:
                raise KeyUnavailable(f"key server answered {response.status_code}; retry later")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    raise KeyUnavailable("key server answer too large")
            return bytes(body)
