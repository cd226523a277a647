"""What a handler error's Sentry event may carry, applied as the SDK's last step (`before_send`).

Always: no request, user or breadcrumbs (nothing of ours fills them: what is there came
from elsewhere, perhaps from another event), and every configured secret blanked as
`[redacted]` wherever it appears. A signature never reaches the worker (a handler's event
keeps no signature header). Unless WEBHOOK_SENTRY_SEND_PAYLOAD is on: no local variables
(the handler's `event` is one), and the payload's text blanked as `[payload]` in the
exception's message, the one place where a handler's run writes text of its own
(`ValueError(f"bad note {payload['note']}")`, `ValueError(payload)`): each string value,
and each key, of four characters or more (a key is the sender's text as much as a value:
`{'ann@example.org': 1}`), and the raw body, wherever one stands as a whole word. In a
log record's arguments (`logentry.params`), a dict's keys are blanked too.

The event's source, type and id are tags, so never blanked, even where the payload holds
them or a part of them. The SDK is not imported here: the rules are tested on their own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.redact import Redactor

if TYPE_CHECKING:
    from workers.event import Event

PAYLOAD_MARK = "[payload]"
# Shorter payload strings ("usd", "ok") would blank common words of every message.
MIN_PAYLOAD_TEXT = 4
# What an event may hold that a handler error never needs.
DROPPED = ("request", "user", "breadcrumbs")


@dataclass(frozen=True, slots=True)
class Scrub:
    secrets: Redactor  # the configured secrets: blanked in every string
    payload: tuple[str, ...]  # blanked in messages; empty when the payload may be sent
    send_payload: bool
    kept: tuple[str, ...] = ()  # the event's source, type and id: never blanked

    @classmethod
    def of(cls, secrets: Redactor, event: Event | None, send_payload: bool) -> Scrub:
        """The rules for one delivery's error (`event`), or for an event that is not a
        handler error's (None: the configured secrets only)."""
        if event is None or send_payload:
            return cls(secrets, (), send_payload)
        kept = {event.id, event.type, event.source}  # tags, by design
        texts = set(payload_texts(event.payload, event.raw)) - kept
        ordered = tuple(sorted(texts, key=len, reverse=True))
        return cls(secrets, ordered, send_payload, tuple(v for v in kept if v))

    def apply(self, event: dict[str, Any]) -> dict[str, Any]:
        for key in DROPPED:
            event.pop(key, None)
        exceptions = (event.get("exception") or {}).get("values") or []
        for exception in exceptions:
            if not self.send_payload:
                for frame in (exception.get("stacktrace") or {}).get("frames") or []:
                    frame.pop("vars", None)
            if self.payload and isinstance(exception.get("value"), str):
                exception["value"] = self.blank_payload(exception["value"])
        if self.payload:
            for key in ("message", "logentry"):
                if key in event:
                    event[key] = self._in_messages(event[key])
        cleaned: dict[str, Any] = self._secrets(event)
        return cleaned

    def blank_payload(self, text: str) -> str:
        found = [value for value in self.payload if value in text]
        if not found:
            return text
        # `paid` of the payload stays in `order.paid`, the event's type.
        keep = [m.span() for v in self.kept for m in re.finditer(re.escape(v), text)]

        def blank(match: re.Match[str]) -> str:
            start, end = match.span()
            inside = any(a <= start and end <= b for a, b in keep)
            return match.group() if inside else PAYLOAD_MARK

        return _whole_words(found).sub(blank, text)

    def _in_messages(self, value: Any, inside: bool = False) -> Any:
        """`message` and `logentry`, whose own keys (`params`, `formatted`) are the SDK's;
        `inside` them (a log record's arguments, a dict among them), keys may be payload."""
        if isinstance(value, str):
            return self.blank_payload(value)
        if isinstance(value, dict):
            return {
                (self.blank_payload(k) if inside and isinstance(k, str) else k): (
                    self._in_messages(v, True)
                )
                for k, v in value.items()
            }
        if isinstance(value, list):  # a log record's arguments: `logentry.params`
            return [self._in_messages(v, True) for v in value]
        return value

    def _secrets(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.secrets(value)
        if isinstance(value, dict):
            return {k: self._secrets(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._secrets(v) for v in value]
        return value


def payload_texts(payload: Any, raw: bytes) -> list[str]:
    """The payload's strings, its dicts' keys as well as its values, long enough to be told
    from ordinary words, as they are and as JSON writes them, and the raw body as text."""
    found: list[str] = []
    stack = [payload]
    while stack:
        value = stack.pop()
        if isinstance(value, str) and len(value.strip()) >= MIN_PAYLOAD_TEXT:
            found += [value, json.dumps(value)[1:-1]]
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    body = raw.decode("utf-8", "replace").strip()
    if len(body) >= MIN_PAYLOAD_TEXT:
        found.append(body)
    return found


def _whole_words(values: list[str]) -> re.Pattern[str]:
    """Each value, not inside a longer word: `paid` is blanked in `was paid`, not in
    `unpaid`. Longest first, so a value inside another leaves none of the longer behind."""
    parts = []
    for value in sorted(values, key=len, reverse=True):
        before = r"(?<!\w)" if re.match(r"\w", value[0]) else ""
        after = r"(?!\w)" if re.match(r"\w", value[-1]) else ""
        parts.append(before + re.escape(value) + after)
    return re.compile("|".join(parts))
