"""Reading Stripe's and GitHub's APIs for `webhooks replay`: a retrying client and one
generator per API, which walk the pages of a time window and yield what they list."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx

ATTEMPTS = 5
# An API's error message is quoted to the operator, shortened to this.
MAX_MESSAGE = 200


class ReplayError(Exception):
    """The provider's API could not be read; the message says why, never with the key."""


class Api:
    """GETs and POSTs with bounded retries on 429 (honouring Retry-After), 5xx and network
    errors; any other error answer stops the replay with the API's own message, after
    `redact` has blanked every configured secret out of it (an API may quote the key)."""

    def __init__(
        self,
        client: httpx.Client,
        redact: Callable[[str], str],
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.client = client
        self.redact = redact
        self.sleep = sleep or time.sleep

    def call(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        delay = 1.0
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = self.client.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                if attempt == ATTEMPTS:
                    raise ReplayError(
                        self.redact(f"cannot reach {url}: {type(exc).__name__}")
                    ) from None
                self.sleep(delay)
                delay *= 2
                continue
            if response.status_code == 429 or response.status_code >= 500:
                if attempt == ATTEMPTS:
                    raise ReplayError(
                        self.redact(f"{url} answered {response.status_code} {ATTEMPTS} times")
                    )
                wait = response.headers.get("retry-after", "")
                self.sleep(min(float(wait), 60.0) if wait.replace(".", "", 1).isdigit() else delay)
                delay *= 2
                continue
            if response.status_code >= 400:
                message = _api_message(response, self.redact)
                raise ReplayError(self.redact(f"{url} answered {response.status_code}: {message}"))
            return response
        raise AssertionError("unreachable")


def _api_message(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """The API's own message, secrets blanked out before it is shortened: cut first, a
    secret at the cut would no longer match and its first characters would be printed."""
    try:
        body = response.json()
    except ValueError:
        return _shortened(redact(response.text))
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message", "") if isinstance(error, dict) else None
    if message is None:
        message = body.get("message", "") if isinstance(body, dict) else ""
    return _shortened(redact(str(message)))


def _shortened(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def stripe_events(api: Api, base: str, since: float, until: float | None) -> Iterator[Any]:
    """Stripe's List Events, newest first, paged with starting_after while has_more."""
    params: dict[str, Any] = {"created[gte]": int(since), "limit": 100}
    if until is not None:
        params["created[lte]"] = int(until)
    while True:
        page = api.call("GET", f"{base.rstrip('/')}/v1/events", params=params).json()
        events = page.get("data") or []
        yield from events
        if not page.get("has_more") or not events:
            return
        params["starting_after"] = events[-1]["id"]


def github_deliveries(
    api: Api, hook_url: str, since: float, until: float | None
) -> Iterator[dict[str, Any]]:
    """A hook's deliveries in [since, until], newest first, following the Link header's
    next page until a page reaches past the window."""
    url: str | None = f"{hook_url}/deliveries?per_page=100"
    while url:
        response = api.call("GET", url)
        older_than_window = False
        for delivery in response.json():
            when = datetime.fromisoformat(delivery["delivered_at"]).timestamp()
            if when < since:
                older_than_window = True
            elif until is None or when <= until:
                yield delivery
        link = response.links.get("next")
        url = None if older_than_window or not link else link.get("url")
