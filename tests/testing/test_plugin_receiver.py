"""`receiver`: a client of the real receiver app (the same ASGI app, the same Lua claim) on
fakeredis, or on a real Redis given by `--webhooks-redis`; `run_jobs()` runs what it queued
with the real worker. The same user module passes on both."""

from __future__ import annotations

import pytest
from redis import Redis

from app.providers import PROVIDERS
from tests.testing.project import BILLING, run, user_project
from tests.testing.test_plugin_event import RECIPE
from workers.dev.redis_server import RedisServer

RECEIVER_TESTS = """
import pytest

def test_accepted_once_queued_and_run_by_the_worker(receiver, signed_request):
    headers, body = signed_request("stripe", {"amount_paid": 5}, type="invoice.paid", id="evt_1")
    answer = receiver.post("/webhooks/stripe", content=body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "evt_1"}
    again = receiver.post("/webhooks/stripe", content=body, headers=headers)
    assert again.json() == {"status": "duplicate", "id": "evt_1"}
    [job] = receiver.jobs()
    assert job.args[:3] == ("stripe", "evt_1", "invoice.paid")
    [outcome] = receiver.run_jobs()
    assert outcome.states == {"record_payment": "done", "notify": "done", "audit": "done"}
    assert outcome.event.id == "evt_1" and outcome.event.attempt == 1
    assert receiver.jobs() == []

def test_each_test_starts_with_an_empty_store(receiver, signed_request):
    headers, body = signed_request("stripe", type="invoice.paid", id="evt_1")
    answer = receiver.post("/webhooks/stripe", content=body, headers=headers)
    assert answer.json()["status"] == "accepted"

def test_a_request_signed_with_another_secret_is_refused(receiver, signed_request):
    headers, body = signed_request("stripe", secret="whsec_" + "x" * 32)
    answer = receiver.post("/webhooks/stripe", content=body, headers=headers)
    assert answer.status_code == 401
    assert receiver.jobs() == []

@pytest.mark.webhooks_settings(WEBHOOK_MAX_RETRIES="1", WEBHOOK_RETRY_INTERVALS="0")
def test_a_failing_handler_is_retried_then_dead_lettered(receiver, signed_request):
    from rq.registry import FailedJobRegistry

    headers, body = signed_request("stripe", {"amount_paid": -1}, type="invoice.paid", id="e2")
    receiver.post("/webhooks/stripe", content=body, headers=headers)
    outcomes = receiver.run_jobs()
    assert [(o.status, o.event.attempt) for o in outcomes] == [("failed", 1), ("failed", 2)]
    # Each handler retries on its own: the retry runs only the one that failed.
    assert outcomes[-1].states == {
        "record_payment": "failed", "notify": "not_run", "audit": "not_run"
    }
    registry = FailedJobRegistry(receiver.settings.webhook_queue, connection=receiver.redis)
    assert len(registry.get_job_ids()) == 1
"""


@pytest.mark.parametrize("store", ["fakeredis", "redis"])
def test_the_same_receiver_tests_pass_on_fakeredis_and_on_a_real_redis(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    redis_server: RedisServer,
    redis: Redis,
    store: str,
) -> None:
    if store == "redis":  # as a CI job would give it
        monkeypatch.setenv("PYTEST_ADDOPTS", f"--webhooks-redis={redis_server.url}")
    user_project(
        pytester,
        "WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=billing\n",
        billing=BILLING,
        test_receiver=RECEIVER_TESTS,
    )
    run(pytester).assert_outcomes(passed=4)
    # The last test's dead letter is still there on the real Redis: it was the one used.
    left = redis.keys("rq:job:stripe-*")
    assert left if store == "redis" else not left


def test_the_receiver_accepts_a_signed_request_for_a_source_of_every_provider(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        f"WEBHOOK_SOURCES={','.join(PROVIDERS)}\nWEBHOOK_RECIPE_RECIPE='{RECIPE}'\n",
        test_user=f"""
        def test_every_provider(receiver, signed_request):
            answers = {{}}
            for source in {list(PROVIDERS)!r}:
                headers, body = signed_request(source, id="evt_" + source)
                answer = receiver.post("/webhooks/" + source, content=body, headers=headers)
                ours = answer.headers.get("x-webhook-status") or answer.json()["status"]
                answers[source] = (answer.status_code, ours)
            assert answers == dict.fromkeys({list(PROVIDERS)!r}, (200, "accepted"))
            outcomes = receiver.run_jobs()  # no handlers: each settles as ignored
            assert {{o.event.source for o in outcomes}} == set({list(PROVIDERS)!r})
            assert {{o.status for o in outcomes}} == {{"ignored"}}
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_request_signed_with_another_private_key_is_refused(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=interactions:discord\n",
        test_user="""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        def test_other_key(receiver, signed_request):
            other = ed25519.Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            headers, body = signed_request("interactions", private_key=other)
            answer = receiver.post("/webhooks/interactions", content=body, headers=headers)
            assert answer.status_code == 401
        """,
    )
    run(pytester).assert_outcomes(passed=1)
