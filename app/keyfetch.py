"""The one client that fetches keys and certificates for verifiers (AWS SNS, Plaid).

Its guards: an allow-list of origins (`WEBHOOK_FETCH_ALLOW`; a signed message names the
URL of its own certificate, so the host must be one we trust before anything is fetched),
a timeout (`WEBHOOK_FETCH_TIMEOUT`), and a cache of what was parsed (a key is fetched once
per hour, not per request; concurrent requests for one key share one fetch; the least
recently used key goes first when it is full). A failure to fetch is a 503, so the provider
retries; it is never a 500, and never an acceptance. A key the server says does not exist
(4xx) is `KeyRefused`, which verifiers turn into a 401; it is remembered for a minute, in
a small cache of its own, so refusals never push good keys out.

The key named by a request is fetched before the request is verified: nothing else can
verify it. So each source may start at most `new_keys` fetches per `per` seconds (10 a
minute); past that, a key not already cached is a 503 without any fetch, until the minute
has passed. A flood of made-up certificate URLs or key ids then costs the key server (and,
for Plaid, our API quota) ten requests a minute, and the keys already cached still verify.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import SplitResult, urlsplit

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


def split_origin(url: str) -> tuple[SplitResult, str] | None:
    """The URL's parts and its origin (`scheme://host[:port]`, as parsed: lower-case host,
    the port as a number); None when it does not parse, has no host or carries user info."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if "@" in parts.netloc or not parts.hostname:
        return None
    origin = f"{parts.scheme}://{parts.hostname}" + (f":{port}" if port is not None else "")
    return parts, origin


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
        refused_capacity: int = 64,
        new_keys: int = 10,
        per: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.origins = tuple(compile_origin(entry) for entry in allow)
        self.timeout = timeout
        self.ttl = ttl
        self.refused_ttl = refused_ttl
        self.capacity = capacity
        self.refused_capacity = refused_capacity
        self.new_keys = new_keys
        self.per = per
        # Read for every expiry and budget: a test moves it instead of sleeping.
        self.clock = clock
        # Good keys, least recently used first; refused ones apart, so they evict none.
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._refused: OrderedDict[str, float] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        # Per source, when each fetch of the last `per` seconds started.
        self._started: dict[str, deque[float]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyFetcher:
        return cls(settings.webhook_fetch_allow, settings.webhook_fetch_timeout)

    def allowed(self, url: str) -> bool:
        """True when the URL's origin is on the allow-list (no user info, no odd port)."""
        found = split_origin(url)
        return found is not None and any(p.fullmatch(found[1]) for p in self.origins)

    async def load(self, key: str, fetch: Fetch, parse: Callable[[bytes], T], *, source: str) -> T:
        """The parsed key for `key`, from the cache or fetched (once, however many ask).

        `KeyRefused` when the server refused it (lately) or the URL is not allowed;
        `KeyUnavailable` when it cannot be fetched, or `source` has used its new keys.
        """
        now = self.clock()
        entry = self._cache.get(key)
        if entry is not None and entry.expires > now:
            self._cache.move_to_end(key)
            return cast(T, entry.value)
        refused_until = self._refused.get(key)
        if refused_until is not None and refused_until > now:
            raise KeyRefused(key)
        future = self._inflight.get(key)
        if future is None:
            if not self.allowed(fetch.url):
                raise KeyRefused("URL not on WEBHOOK_FETCH_ALLOW")
            self._spend(source, now)
            future = asyncio.ensure_future(self._fetch_and_parse(fetch, parse))
            self._inflight[key] = future
            future.add_done_callback(lambda done: self._settle(key, done))
        return cast(T, await asyncio.shield(future))

    def _spend(self, source: str, now: float) -> None:
        """Count a fetch for `source`, or refuse it (503, nothing fetched) past the budget."""
        started = self._started.setdefault(source, deque())
        while started and started[0] <= now - self.per:
            started.popleft()
        if len(started) >= self.new_keys:
            raise KeyUnavailable(
                f"more than {self.new_keys} new keys in {self.per:g} s for this source; retry later"
            )
        started.append(now)

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
        now = self.clock()
        if error is None:
            self._refused.pop(key, None)
            self._cache[key] = _Entry(now + self.ttl, done.result())
            self._cache.move_to_end(key)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        elif isinstance(error, KeyRefused):
            self._refused[key] = now + self.refused_ttl
            self._refused.move_to_end(key)
            while len(self._refused) > self.refused_capacity:
                self._refused.popitem(last=False)

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
