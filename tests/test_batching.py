"""Concurrent claims share one pipeline per event-loop tick, each with its own answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis import Redis
from redis.exceptions import ConnectionError, NoScriptError
from rq import Queue
from starlette.requests import Request

from app.batching import BATCH_CAP, ScriptBatcher
from app.intake import AsyncIntake
from app.providers import Delivery
from app.receiver import Receiver
from app.settings import Settings
from tests.conftest import event_body, sign
from workers.dev.redis_server import free_port


def claims(settings: Settings, event_ids: list[str], cancel: int | None = None) -> list[Any]:
    """Claim every id concurrently, as concurrent requests would; cancel one if asked."""

    async def run() -> list[Any]:
        client = aioredis.Redis.from_url(settings.redis_url)
        intake = AsyncIntake(settings, client)
        source = settings.sources["inbound"]
        try:
            tasks = [
                asyncio.ensure_future(
                    intake.claim_and_enqueue(
                        source, Delivery(i, "order.created"), b'{"id": "%s"}' % i.encode(), 1.0
                    )
                )
                for i in event_ids
            ]
            if cancel is not None:
                tasks[cancel].cancel()
            return await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await client.aclose()

    return asyncio.run(run())


def test_concurrent_claims_go_out_as_one_batch_with_an_answer_each(
    make_settings: Callable[..., Settings], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch_sizes: list[int] = []
    send = ScriptBatcher.send

    async def counted(self: ScriptBatcher, batch: list[Any]) -> list[Any]:
        batch_sizes.append(len(batch))
        return await send(self, batch)

    settings = make_settings()
    claims(settings, ["warm-up"])  # loads the script, so no NOSCRIPT resend below
    monkeypatch.setattr(ScriptBatcher, "send", counted)
    results = claims(settings, [f"e{n}" for n in range(20)] + ["e0", "e1"])
    assert batch_sizes == [22]  # one pipeline, one round trip
    assert [r.accepted for r in results] == [True] * 20 + [False, False]
    assert len(Queue("webhooks", connection=redis)) == 21


def test_a_burst_goes_to_redis_in_batches_while_the_rest_is_still_being_verified(
    make_settings: Callable[..., Settings], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two and a half batches of requests ready in one tick: the first BATCH_CAP claims are
    sent before the next request is verified, so Redis runs them while this process works
    on the others."""
    half = BATCH_CAP // 2
    count = 2 * BATCH_CAP + half
    steps: list[str] = []
    send = ScriptBatcher.send

    async def recorded(self: ScriptBatcher, batch: list[Any]) -> list[Any]:
        steps.append(f"sent {len(batch)}")
        return await send(self, batch)

    async def burst() -> list[Any]:
        client = aioredis.Redis.from_url(settings.redis_url)
        receiver = Receiver(settings, client)
        verifier = receiver.verifiers["inbound"]
        check = verifier.check

        def checked(inbound: Any) -> Any:
            steps.append("verified")
            return check(inbound)

        monkeypatch.setattr(verifier, "check", checked)
        try:
            return await asyncio.gather(
                *(receiver.receive("inbound", post(n)) for n in range(count))
            )
        finally:
            await client.aclose()

    settings = make_settings()
    claims(settings, ["warm-up"])  # loads the script, so no NOSCRIPT resend below
    monkeypatch.setattr(ScriptBatcher, "send", recorded)
    answers = asyncio.run(burst())
    assert [a.body["status"] for a in answers] == ["accepted"] * count
    full, rest = ["verified"] * BATCH_CAP + [f"sent {BATCH_CAP}"], ["verified"] * half
    assert steps == [*full, *full, *rest, f"sent {half}"]
    assert len(Queue("webhooks", connection=redis)) == count + 1  # and the warm-up


def post(n: int) -> Request:
    """A signed delivery whose body has arrived whole, as uvicorn hands it to the app."""
    body = event_body(f"burst_{n}")
    headers = [
        (b"content-length", str(len(body)).encode()),
        (b"x-signature-256", sign(body).encode()),
    ]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/webhooks/inbound", "headers": headers}
    return Request(scope, receive)


def test_a_flushed_script_cache_is_reloaded_and_the_batch_resent(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    settings = make_settings()
    claims(settings, ["a"])
    redis.script_flush()  # as after a Redis restart
    results = claims(settings, ["b", "c"])
    assert [r.accepted for r in results] == [True, True]
    assert len(Queue("webhooks", connection=redis)) == 3


def test_after_a_script_flush_only_the_claims_that_did_not_run_are_sent_again(
    make_settings: Callable[..., Settings], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache flushed between two claims of one pipeline: the first landed, the second
    # found no script. Sending both again would answer the first `duplicate`.
    sent: list[list[str]] = []
    send = ScriptBatcher.send

    async def flushed_midway(self: ScriptBatcher, batch: list[Any]) -> list[Any]:
        sent.append([keys[0] for keys, _, _ in batch])
        if len(sent) > 1:
            return await send(self, batch)
        landed = await send(self, batch[:1])
        redis.script_flush()
        return [landed[0], NoScriptError("NOSCRIPT No matching script.")]

    settings = make_settings()
    claims(settings, ["warm-up"])
    monkeypatch.setattr(ScriptBatcher, "send", flushed_midway)
    results = claims(settings, ["p", "q"])
    assert [r.accepted for r in results] == [True, True]
    assert len(sent) == 2 and len(sent[1]) == 1 and sent[1][0] == sent[0][1]


def test_a_cancelled_request_does_not_disturb_the_others_in_its_batch(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    results = claims(make_settings(), ["x", "y", "z"], cancel=1)
    assert isinstance(results[1], asyncio.CancelledError)
    assert results[0].accepted and results[2].accepted


def test_a_request_that_timed_out_keeps_its_timeout_when_its_batch_then_fails() -> None:
    # Redis cannot be reached: the batch fails with a ConnectionError, after the first
    # request's own (zero) timeout has answered it; the second still gets the failure.
    async def run() -> list[Any]:
        client = aioredis.Redis(port=free_port(), retry=None)
        batcher = ScriptBatcher(client, "return 1")
        try:
            calls = (batcher(["k"], [], timeout=0), batcher(["k"], []))
            # A guard, not a measure: a batch that never answers fails here, not hangs.
            return await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 30)
        finally:
            await client.aclose()

    timed_out, failed = asyncio.run(run())
    assert isinstance(timed_out, TimeoutError) and isinstance(failed, ConnectionError)
