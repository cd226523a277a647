"""The fixtures from async tests: `deliver()` and `receiver.run_jobs()` called from a test that
runs an event loop (pytest-asyncio's, anyio's) run the async handlers all the same, on the
one handler loop of the process, where a module-level client keeps working from one event,
and one test, to the next."""

from __future__ import annotations

import pytest
from redis import Redis

from tests.testing.project import run, user_project
from workers.dev.redis_server import RedisServer

ENV = "WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=notes\n"

# A user's handler module with one asyncio client for the module, as redis.asyncio advises.
NOTES = """
import asyncio
import os

import redis.asyncio as aioredis

from workers import Event, handler

client = aioredis.Redis.from_url(os.environ["NOTES_REDIS_URL"])

@handler("stripe", "invoice.paid")
async def note(event: Event) -> None:
    await client.rpush("notes", event.id)

@handler("stripe", "invoice.overdue")
async def wait_forever(event: Event) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await client.rpush("notes", "cancelled " + event.id)
        raise
"""


def six_events(mark: str, before: str = "") -> str:
    """A test module: one async test, marked `mark`, that gets three events through
    `deliver` and three through the receiver and the worker."""
    return f"""
import pytest
{before}

@pytest.mark.{mark}
async def test_six_events(webhook_event, deliver, receiver, signed_request):
    for n in range(3):
        outcome = deliver(webhook_event("stripe", "invoice.paid", id=f"evt_d{{n}}"))
        assert outcome.states == {{"note": "done"}}
    for n in range(3):
        headers, body = signed_request("stripe", type="invoice.paid", id=f"evt_r{{n}}")
        answer = receiver.post("/webhooks/stripe", content=body, headers=headers)
        assert answer.json()["status"] == "accepted"
    assert [o.states for o in receiver.run_jobs()] == [{{"note": "done"}}] * 3
"""


SIX = [*(f"evt_d{n}" for n in range(3)), *(f"evt_r{n}" for n in range(3))]


@pytest.fixture
def notes_project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, redis_server: RedisServer
) -> pytest.Pytester:
    monkeypatch.setenv("NOTES_REDIS_URL", redis_server.url)
    user_project(pytester, ENV, notes=NOTES)
    return pytester


def notes(redis: Redis) -> list[str]:
    return [note.decode() for note in redis.lrange("notes", 0, -1)]


def test_an_asyncio_test_gets_its_async_handlers_done_by_deliver_and_run_jobs(
    notes_project: pytest.Pytester, redis: Redis
) -> None:
    notes_project.makepyfile(test_user=six_events("asyncio"))
    run(notes_project).assert_outcomes(passed=1)
    assert notes(redis) == SIX


def test_an_anyio_test_gets_its_async_handlers_done_by_deliver_and_run_jobs(
    notes_project: pytest.Pytester, redis: Redis
) -> None:
    anyio_on_asyncio = '\n@pytest.fixture\ndef anyio_backend():\n    return "asyncio"\n'
    notes_project.makepyfile(test_user=six_events("anyio", anyio_on_asyncio))
    run(notes_project).assert_outcomes(passed=1)
    assert notes(redis) == SIX


def test_one_module_level_client_serves_the_sync_and_async_tests_of_a_run(
    notes_project: pytest.Pytester, redis: Redis
) -> None:
    notes_project.makepyfile(
        test_user="""
        import pytest

        def test_sync_first(webhook_event, deliver):
            assert deliver(webhook_event("stripe", "invoice.paid", id="evt_1")).status == "done"

        @pytest.mark.asyncio
        async def test_async_between(webhook_event, deliver):
            assert deliver(webhook_event("stripe", "invoice.paid", id="evt_2")).status == "done"

        def test_sync_after(webhook_event, deliver):
            assert deliver(webhook_event("stripe", "invoice.paid", id="evt_3")).status == "done"
        """
    )
    run(notes_project).assert_outcomes(passed=3)
    assert notes(redis) == ["evt_1", "evt_2", "evt_3"]


def test_a_job_timeout_in_run_jobs_from_an_async_test_cancels_the_handler_and_the_next_runs(
    notes_project: pytest.Pytester, redis: Redis
) -> None:
    notes_project.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.webhooks_settings(WEBHOOK_JOB_TIMEOUT="1", WEBHOOK_MAX_RETRIES="0")
        @pytest.mark.asyncio
        async def test_timeout(receiver, signed_request):
            for event_id, type in (("evt_slow", "invoice.overdue"), ("evt_next", "invoice.paid")):
                headers, body = signed_request("stripe", type=type, id=event_id)
                receiver.post("/webhooks/stripe", content=body, headers=headers)
            slow, after = receiver.run_jobs()
            assert slow.states == {"wait_forever": "failed"}
            assert "exceeded maximum timeout" in str(slow["wait_forever"].error)
            assert after.states == {"note": "done"}
        """
    )
    run(notes_project).assert_outcomes(passed=1)
    assert notes(redis) == ["cancelled evt_slow", "evt_next"]
