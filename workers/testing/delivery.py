"""`deliver(event)`: the registered handlers run in this process as the worker runs them.

The selection and order (`registry.handlers_for`: the type's handlers, then the `"*"`
ones), the version guard and the run itself (`attempt.run_handlers`) are the worker's own
code. The guard keeps its entity versions in a store of the test's: a fakeredis server,
which runs the guard's real Lua script, so a test that delivers version 2 and then
version 1 sees the second stale. Its owner is the event's job id, as in the worker: the
same event delivered again (a retry) passes its own guard.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from redis import Redis

from app.keys import job_id_for
from app.settings import Settings
from workers.event import Event
from workers.registry import registry
from workers.runtime.attempt import HandlerRun, attempt_failure, run_handlers
from workers.testing.outcome import Outcome, outcome_of
from workers.versions import JobContext, current

EXTRA_MISSING = (
    "rq-webhook-receiver's deliver and receiver fixtures need fakeredis with Lua: "
    "pip install 'rq-webhook-receiver[testing]'"
)


def testing_extra_missing() -> bool:
    """True when the `[testing]` extra's fakeredis (and lupa, its Lua) is not installed."""
    return any(importlib.util.find_spec(name) is None for name in ("fakeredis", "lupa"))


def fake_server() -> Any:
    """A fakeredis server of the test's own, empty."""
    if testing_extra_missing():
        raise RuntimeError(EXTRA_MISSING)
    import fakeredis

    return fakeredis.FakeServer()


def fake_client(server: Any) -> Redis:
    import fakeredis

    client: Redis = fakeredis.FakeRedis(server=server)
    return client


def deliver_event(event: Event, settings: Settings, store: Redis) -> Outcome:
    """Run `event` through its handlers; a handler's exception is in the outcome, not raised."""
    entries = registry.handlers_for(event.source, event.type)
    if not entries:
        return outcome_of(event, entries, [], None)
    keys = settings.keys
    context = JobContext(
        store, keys, settings.webhook_ledger_ttl, job_id_for(event.source, event.id)
    )
    runs: list[HandlerRun] = []
    token = current.set(context)
    try:
        run_handlers(event, entries, runs.append)
    except Exception as exc:  # a timeout: the attempt ended in the running handler
        return outcome_of(event, entries, runs, exc)
    finally:
        current.reset(token)
    states = {run.name: run.state for run in runs}
    return outcome_of(event, entries, runs, attempt_failure(runs, states))
