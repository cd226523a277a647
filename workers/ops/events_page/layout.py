"""What the Events page's layout shows around its content: rq-dashboard's navbar, the
autorefresh switch and the Redis instance list.

rq-dashboard's pages poll every RQ_DASHBOARD_POLL_INTERVAL with script; the Events page
has none (its CSP forbids it), so it reloads itself with `<meta http-equiv="refresh">`,
every `REFRESH_SECONDS` (a whole page, not a table's rows: 2.5 s would be a lot). The
switch is a link that flips a `refresh` query parameter and keeps every other one (the
search's fields, the event's id).

Where it is on by default (`default_on`) is the view's choice: a reload loses what is being
typed in a form and the focus (Chromium does not keep either), so the list, which carries
the search form, reloads only when asked (`refresh=on`); an event's page, which has no
field to type in, reloads by default while the event is pending, until it settles
(`refresh=off` stops it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import current_app, request, url_for
from rq_dashboard.web import escape_format_instance_list

REFRESH_SECONDS = 10
# The parameter's two values; absent, the view's default holds.
ON, OFF = "on", "off"
# Longer values are cut in the switch's link (an event id is at most 4096 characters).
MAX_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Autorefresh:
    on: bool
    toggle: str  # the switch's link: this page with autorefresh the other way
    seconds: int = REFRESH_SECONDS


@dataclass(frozen=True, slots=True)
class Instance:
    """One of rq-dashboard's Redis instances: its number in the URLs, and where it is."""

    number: int
    where: str


@dataclass(frozen=True, slots=True)
class Layout:
    autorefresh: Autorefresh
    instances: tuple[Instance, ...]
    # rq-dashboard's own links: `{prefix}{instance}/view/queues`, as its navbar builds them.
    prefix: str
    current: int = 0

    def view(self, page: str, number: int | None = None) -> str:
        return f"{self.prefix}{self.current if number is None else number}/view/{page}"


def autorefresh(args: Mapping[str, str], default_on: bool, endpoint: str) -> Autorefresh:
    """On unless `refresh=off` when `default_on`, off unless `refresh=on` otherwise."""
    asked = args.get("refresh")
    on = asked != OFF if default_on else asked == ON
    kept: dict[str, Any] = {k: v[:MAX_KEPT] for k, v in args.items() if k != "refresh" and v}
    # Back to the default drops the parameter; away from it sets it.
    if on != default_on:
        toggle = url_for(endpoint, **kept)
    else:
        toggle = url_for(endpoint, **kept, refresh=OFF if on else ON)
    return Autorefresh(on, toggle)


def instances() -> tuple[Instance, ...]:
    """rq-dashboard's instance list (`RQ_DASHBOARD_REDIS_URL`: a location, never a
    credential; masked as rq-dashboard masks it all the same)."""
    configured = current_app.config.get("RQ_DASHBOARD_REDIS_URL") or ()
    shown = escape_format_instance_list(configured) or []
    return tuple(Instance(number, str(where)) for number, where in enumerate(shown))


def page_layout(default_on: bool) -> Layout:
    """The layout of the page being answered."""
    return Layout(
        autorefresh(request.args, default_on, request.endpoint or "events.index"),
        instances(),
        url_for("rq_dashboard.queues_overview"),
    )
