"""Times as an operator reads them at a glance: "3 min ago", "yesterday 14:02", with the
exact time kept for a hover (the `<time>` element's `datetime` and `title`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# A receiver's clock a little ahead of the dashboard's: still "just now", not "in 2 s".
SKEW = 60.0


@dataclass(frozen=True, slots=True)
class Moment:
    exact: str  # ISO 8601 in UTC to the second, `Z`-suffixed: the markup's datetime and title
    text: str  # relative to the page's now


def moment(timestamp: float | None, now: float) -> Moment | None:
    if timestamp is None:
        return None
    when = datetime.fromtimestamp(timestamp, UTC)
    return Moment(when.strftime("%Y-%m-%dT%H:%M:%SZ"), relative(when, now))


def relative(when: datetime, now: float) -> str:
    """Seconds, minutes or hours ago within the day; `yesterday HH:MM` the day before
    (UTC days, as the chart's); a date and time further back, or ahead of now."""
    age = now - when.timestamp()
    today = datetime.fromtimestamp(now, UTC).date()
    if -SKEW <= age < 10:
        return "just now"
    if 0 <= age < 60:
        return f"{age:.0f} s ago"
    if 0 <= age < 3600:
        return f"{age // 60:.0f} min ago"
    if age >= 0 and when.date() == today:
        return f"{age // 3600:.0f} h ago"
    if age >= 0 and when.date() == today - timedelta(days=1):
        return f"yesterday {when:%H:%M}"
    if when.year == today.year:
        return f"{when:%-d %b %H:%M}"
    return f"{when:%Y-%m-%d %H:%M}"


def waited(seconds: float) -> str:
    """How long the head of a queue has waited, in the unit that reads best."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"
