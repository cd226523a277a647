"""The chart's range: the `range` query parameter, what each range is called, and the links
that choose one (plain links: the page has no script)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workers.ops.events_page.picture import Span

# What each range is called, and one bar's length.
RANGES = {
    Span.HOUR: ("Last hour", "per minute"),
    Span.DAY: ("Last 24 hours", "per 15 minutes"),
    Span.WEEK: ("Last 7 days", "per hour"),
}
AUTO = "auto"
CHOICES = (AUTO, *(str(span) for span in Span))


def chosen(value: str | None) -> Span | None:
    """The `range` query parameter: hour, day or week; anything else is auto (None)."""
    return Span(value) if value in set(Span) else None


@dataclass(frozen=True, slots=True)
class RangeLink:
    label: str
    url: str
    current: bool


def links(shown: Span, auto: bool, url_of: Callable[[str], str]) -> list[RangeLink]:
    """The range choices, the one shown marked; `auto` says which it chose."""
    return [
        RangeLink(
            f"{AUTO} ({shown})" if choice == AUTO and auto else choice,
            url_of(choice),
            (choice == AUTO) if auto else (choice == str(shown)),
        )
        for choice in CHOICES
    ]
