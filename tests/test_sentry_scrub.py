"""What a handler error's Sentry event may carry (`workers/runtime/sentry_scrub.py`), on
events shaped as sentry-sdk hands them to `before_send`; and which failures are reported."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest

from app.redact import Redactor
from app.settings import Settings
from app.turns import HandlerState
from workers.event import Event, PermanentError
from workers.registry import Registered
from workers.runtime.attempt import HandlerRun
from workers.runtime.sentry_scrub import Scrub

SECRET = "whsec_the-configured-secret"
SECRETS = Redactor([SECRET])


def delivery(payload: dict[str, Any]) -> Event:
    raw = json.dumps(payload).encode()
    return Event(
        source="shop",
        id=str(payload.get("id", "evt_1")),
        type=str(payload.get("type", "order.paid")),
        payload=payload,
        raw=raw,
        headers={"x-shop-topic": "orders/paid"},
        received_at=datetime.now(UTC),
        attempt=1,
    )


def sentry_event(text: str, **extra: Any) -> dict[str, Any]:
    frame = {
        "module": "shop.handlers",
        "function": "on_paid",
        "context_line": "    raise ValueError(message)",
        "vars": {"event": "Event(payload={'email': 'ann@example.org'})"},
    }
    return {
        "exception": {
            "values": [{"type": "ValueError", "value": text, "stacktrace": {"frames": [frame]}}]
        },
        "tags": {"webhook.event_id": "evt_1", "webhook.event_type": "order.paid"},
        **extra,
    }


def value(event: dict[str, Any]) -> str:
    return str(event["exception"]["values"][0]["value"])


def test_payload_text_in_the_message_is_blanked_as_whole_words() -> None:
    event = delivery(
        {"id": "evt_1", "type": "order.paid", "email": "ann@example.org", "state": "paid"}
    )
    scrub = Scrub.of(SECRETS, event, send_payload=False)
    sent = scrub.apply(sentry_event("ann@example.org is paid (was unpaid) for evt_1 order.paid"))
    # The id and type are tags anyway; `paid` inside `unpaid` is another word.
    assert value(sent) == "[payload] is [payload] (was unpaid) for evt_1 order.paid"


def test_strings_shorter_than_four_characters_are_left() -> None:
    event = delivery({"currency": "usd", "ok": "yes", "region": "west"})
    sent = Scrub.of(SECRETS, event, False).apply(sentry_event("usd is not accepted in west: yes"))
    assert value(sent) == "usd is not accepted in [payload]: yes"


def test_text_as_json_or_as_the_whole_body_is_blanked_too() -> None:
    event = delivery({"note": 'say "hi" twice', "nested": [{"deep": "a-list-value"}]})
    message = f"bad body {event.raw.decode()}; bad note {json.dumps(event.payload)}"
    sent = Scrub.of(SECRETS, event, False).apply(sentry_event(message))
    assert "hi" not in value(sent) and "a-list-value" not in value(sent)
    # `note` is one of the payload's keys: the sender's word, blanked too.
    assert value(sent).startswith("bad body [payload]; bad [payload] ")


def test_chained_exceptions_and_messages_are_blanked() -> None:
    event = delivery({"email": "ann@example.org"})
    found = sentry_event("wrapped", message="for ann@example.org")
    found["exception"]["values"].insert(0, {"type": "KeyError", "value": "'ann@example.org'"})
    sent = Scrub.of(SECRETS, event, False).apply(found)
    assert [v["value"] for v in sent["exception"]["values"]] == ["'[payload]'", "wrapped"]
    assert sent["message"] == "for [payload]"


def test_local_variables_request_user_and_breadcrumbs_are_dropped() -> None:
    event = delivery({"email": "ann@example.org"})
    found = sentry_event(
        "failed",
        request={"data": "ann@example.org"},
        user={"email": "ann@example.org"},
        breadcrumbs={"values": [{"message": "ann@example.org"}]},
    )
    sent = Scrub.of(SECRETS, event, False).apply(found)
    assert "ann@example.org" not in json.dumps(sent)
    assert not {"request", "user", "breadcrumbs"} & set(sent)
    assert "message" not in sent and "logentry" not in sent


def test_asked_for_the_payload_is_sent_with_the_local_variables() -> None:
    event = delivery({"email": "ann@example.org"})
    sent = Scrub.of(SECRETS, event, send_payload=True).apply(sentry_event("ann@example.org"))
    assert value(sent) == "ann@example.org"
    assert "vars" in sent["exception"]["values"][0]["stacktrace"]["frames"][0]


def test_a_configured_secret_is_blanked_everywhere_even_when_the_payload_is_sent() -> None:
    event = delivery({"email": "ann@example.org"})
    found = sentry_event(
        f"auth failed with {SECRET}",
        extra={"url": f"https://api.example/?key={quote(SECRET, safe='')}"},
    )
    found["exception"]["values"][0]["stacktrace"]["frames"][0]["context_line"] = (
        f'    SECRET = "{SECRET}"'
    )
    for send_payload in (False, True):
        sent = Scrub.of(SECRETS, event, send_payload).apply(json.loads(json.dumps(found)))
        assert SECRET not in json.dumps(sent) and quote(SECRET, safe="") not in json.dumps(sent)
        assert value(sent) == "auth failed with [redacted]"


def test_an_event_not_of_a_handler_error_has_its_secrets_blanked() -> None:
    # A handler's own `sentry_sdk.capture_message`: no delivery known, the secrets still.
    sent = Scrub.of(SECRETS, None, False).apply(
        {"message": f"hello {SECRET}", "breadcrumbs": {"values": []}}
    )
    assert sent == {"message": "hello [redacted]"}


# Which failures are reported: the SDK's capture replaced by a list.
def reports(events: str, captured: list[tuple[str, bool]]) -> Any:
    from workers.runtime.sentry_reports import SentryReports

    settings = Settings.load(
        _env_file=None,
        webhook_signing_secret=SECRET,
        sentry_dsn="https://0123abcd@o1.ingest.example/7",
        webhook_sentry_events=events,
    )
    reporter = SentryReports(settings)
    reporter._capture = lambda event, run, dead, scrub: captured.append((run.name, dead))  # type: ignore[method-assign]
    return reporter


def turn(name: str, state: HandlerState, error: BaseException | None = None) -> HandlerRun:
    return HandlerRun(Registered(lambda event: None, name=name), state, error)


def test_final_reports_a_permanent_failure_and_a_dead_letters_not_a_retried_one() -> None:
    captured: list[tuple[str, bool]] = []
    reporter = reports("final", captured)
    event = delivery({"id": "evt_1"})
    runs = [
        turn("a.done", HandlerState.DONE),
        turn("a.retried", HandlerState.FAILED, RuntimeError("down")),
        turn("a.permanent", HandlerState.PERMANENT, PermanentError("never")),
    ]
    reporter.attempt_failed(event, runs, dead=False)
    assert captured == [("a.permanent", False)]
    captured.clear()
    reporter.attempt_failed(event, runs[:2], dead=True)
    assert captured == [("a.retried", True)]


def test_attempt_reports_every_failed_handler_of_every_attempt() -> None:
    captured: list[tuple[str, bool]] = []
    reporter = reports("attempt", captured)
    runs = [
        turn("a.first", HandlerState.FAILED, RuntimeError("down")),
        turn("a.stale", HandlerState.STALE),
        turn("a.second", HandlerState.FAILED, TimeoutError("slow")),
    ]
    reporter.attempt_failed(delivery({"id": "evt_1"}), runs, dead=False)
    assert captured == [("a.first", False), ("a.second", False)]


def test_a_report_that_fails_fails_no_delivery(caplog: pytest.LogCaptureFixture) -> None:
    reporter = reports("attempt", [])

    def broken(*args: Any) -> None:
        raise OSError("the SDK broke")

    reporter._capture = broken
    runs = [turn("a.first", HandlerState.FAILED, RuntimeError("down"))]
    reporter.attempt_failed(delivery({"id": "evt_1"}), runs, dead=True)
    assert "a handler error could not be reported to Sentry" in caplog.text


def test_a_logged_message_and_its_arguments_are_blanked() -> None:
    """Sentry's logging integration sends a handler's `logger.error("... %s", value)` as a
    `logentry`: its template, its arguments and the message they make."""
    event = delivery({"email": "ann@example.org"})
    logentry = {
        "message": "no account for %s (%d tries)",
        "params": ["ann@example.org", 3],
        "formatted": "no account for ann@example.org (3 tries)",
    }
    sent = Scrub.of(SECRETS, event, False).apply({"logentry": logentry, "level": "error"})
    assert sent["logentry"] == {
        "message": "no account for %s (%d tries)",
        "params": ["[payload]", 3],
        "formatted": "no account for [payload] (3 tries)",
    }


def test_a_body_too_short_to_tell_from_ordinary_text_is_left() -> None:
    event = delivery({})  # the body is `{}`
    sent = Scrub.of(SECRETS, event, False).apply(sentry_event("expected a field in {}"))
    assert value(sent) == "expected a field in {}"


def test_the_payloads_keys_are_blanked_as_its_values_are() -> None:
    """`raise ValueError(event.payload)`: the message is the dict's repr, whose keys are the
    sender's text as much as its values."""
    payload = {
        "customer-key-m4rker": {"nested-key-m4rker": 1, "list": [{"deep-key-m4rker": True}]},
        "note": "a value",
    }
    event = delivery(payload)
    logentry = {
        "message": "bad %s",
        "params": [{"param-key-m4rker": 2}],
        "formatted": f"bad {payload}",
    }
    found = sentry_event(str(payload), message=repr(payload), logentry=logentry)
    found["exception"]["values"].insert(0, {"type": "KeyError", "value": "'deep-key-m4rker'"})
    sent = Scrub.of(SECRETS, delivery({**payload, "param-key-m4rker": 0}), False).apply(found)
    assert "m4rker" not in json.dumps(sent)
    blanked = "{'[payload]': {'[payload]': 1, '[payload]': [{'[payload]': True}]}, '[payload]': "
    assert [v["value"] for v in sent["exception"]["values"]] == [
        "'[payload]'",
        blanked + "'[payload]'}",
    ]
    assert sent["logentry"]["message"] == "bad %s"  # the record's own fields stay
    assert sent["logentry"]["params"] == [{"[payload]": 2}]
    # As JSON writes them, too.
    as_json = Scrub.of(SECRETS, event, False).apply(sentry_event(json.dumps(payload)))
    assert "m4rker" not in value(as_json)
