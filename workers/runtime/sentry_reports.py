"""Handler errors in Sentry, SENTRY_DSN set (`workers/runtime/reports.py` says when it runs).

One Sentry event per failing handler: its own exception and traceback (the handler's frames
marked as the app's), titled with the handler's name, grouped per handler and exception
type (`fingerprint`), tagged with the delivery's source, type and id, the handler, the
attempt, the worker mode and what comes next (`retry` or `dead_letter`). What it may carry
is `workers/runtime/sentry_scrub.py`'s, applied to every event the SDK sends.

The SDK runs none of its integrations: RQ's hooks a path this worker does not take (and
would report each failure a second time if it did), logging's would turn the worker's own
error lines into events, the excepthook's and the others' report what is no handler's.
"""

from __future__ import annotations

import signal
from typing import Any

import sentry_sdk
from sentry_sdk.utils import event_from_exception

from app.logs import logger
from app.redact import Redactor
from app.settings import Settings
from app.turns import HandlerState
from workers.event import Event
from workers.runtime.attempt import HandlerRun
from workers.runtime.sentry_scrub import Scrub

# Where the event's own scrubbing rules ride, from the capture to `before_send`.
HINT = "webhook_scrub"
# Sentry keeps a tag's value up to this many characters.
MAX_TAG = 200
FLUSH_TIMEOUT = 2.0


class SentryReports:
    def __init__(self, settings: Settings) -> None:
        self.final_only = settings.webhook_sentry_events == "final"
        self.send_payload = settings.webhook_sentry_send_payload
        self.mode = settings.webhook_worker_mode
        self.secrets = Redactor.of(settings)
        # For what a handler sends itself (`sentry_sdk.capture_message`): secrets blanked.
        self.other = Scrub.of(self.secrets, None, self.send_payload)

    def attempt_failed(self, event: Event, runs: list[HandlerRun], dead: bool) -> None:
        failed = [run for run in runs if run.error is not None and self._reported(run, dead)]
        if not failed:
            return
        # The job's deadline (SIGALRM) waits until the events are queued: raised inside the
        # SDK, it would fail the attempt over a report, and could leave its queue's lock held.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            scrub = Scrub.of(self.secrets, event, self.send_payload)
            for run in failed:
                self._capture(event, run, dead, scrub)
        except Exception as exc:  # a report must never fail a delivery
            logger.warning(
                "a handler error could not be reported to Sentry",
                extra={"error": type(exc).__name__},
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _reported(self, run: HandlerRun, dead: bool) -> bool:
        """Every failure, or (final) one after which the handler does not run again."""
        return not self.final_only or dead or run.state is HandlerState.PERMANENT

    def _capture(self, event: Event, run: HandlerRun, dead: bool, scrub: Scrub) -> None:
        error = run.error
        assert error is not None
        found, hint = event_from_exception(
            (type(error), error, error.__traceback__),
            client_options=sentry_sdk.get_client().options,
            mechanism={"type": "webhook_handler", "handled": False},
        )
        kind = type(error)
        found["level"] = "error"
        found["transaction"] = run.name
        found["fingerprint"] = [
            "webhook-handler",
            run.name,
            f"{kind.__module__}.{kind.__qualname__}",
        ]
        found["tags"] = {
            "webhook.source": event.source,
            "webhook.event_type": event.type[:MAX_TAG],
            "webhook.event_id": event.id[:MAX_TAG],
            "webhook.handler": run.name[:MAX_TAG],
            "webhook.attempt": str(event.attempt),
            "webhook.worker_mode": self.mode,
            "webhook.outcome": "dead_letter" if dead else "retry",
        }
        if self.send_payload:
            found["extra"] = {"webhook.payload": event.payload}
        hint[HINT] = scrub
        sentry_sdk.capture_event(found, hint=hint)

    def before_send(self, event: Any, hint: dict[str, Any]) -> Any:
        scrub = hint.get(HINT)
        return (scrub if isinstance(scrub, Scrub) else self.other).apply(event)

    def flush(self) -> None:
        sentry_sdk.flush(timeout=FLUSH_TIMEOUT)


def start(settings: Settings) -> SentryReports:
    assert settings.sentry_dsn is not None
    reports = SentryReports(settings)
    sentry_sdk.init(
        dsn=settings.sentry_dsn.get_secret_value(),
        environment=settings.sentry_environment,
        release=settings.sentry_release,
        default_integrations=False,  # the auto-enabling ones (RQ's, Redis's...) too
        auto_enabling_integrations=False,
        send_default_pii=False,
        include_local_variables=settings.webhook_sentry_send_payload,
        max_breadcrumbs=0,
        # The handlers' frames are the app's; the worker's around them are not.
        in_app_include=list(settings.webhook_handlers),
        in_app_exclude=["workers"],
        before_send=reports.before_send,
    )
    return reports
