"""`webhooks replay`: every legal source name can be replayed from its provider's API,
including the names of the command's own subcommands (`ledger`, `provider`)."""

from __future__ import annotations

import json

import pytest
from redis import Redis
from rq import Queue

from tests.conftest import webhooks
from tests.fake_apis import FakeApi
from tests.replay_apis import NOW, api, env, stripe_event, waits

__all__ = ["api", "env", "waits"]  # fixtures


@pytest.fixture
def named(monkeypatch: pytest.MonkeyPatch, env: None, api: FakeApi) -> None:
    """Stripe sources named after the subcommands, beside the usual ones."""
    monkeypatch.setenv(
        "WEBHOOK_SOURCES", "inbound:hmac,stripe,github,ledger:stripe,provider:stripe"
    )
    monkeypatch.setenv("WEBHOOK_SECRET_LEDGER", "whsec_ledger-secret-0123")
    monkeypatch.setenv("WEBHOOK_SECRET_PROVIDER", "whsec_provider-secret-0123")
    api.events = [stripe_event(n, NOW - n * 60) for n in range(3)]


def _sources_of(redis: Redis) -> list[str]:
    jobs = Queue("webhooks", connection=redis).get_jobs()
    return sorted({str(job.meta["source"]) for job in jobs})


@pytest.mark.parametrize("name", ["ledger", "provider"])
def test_a_source_named_like_a_subcommand_replays_from_its_api_in_the_documented_form(
    named: None, redis: Redis, name: str
) -> None:
    result = webhooks("replay", name, "--since", str(NOW - 400), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"fetched": 3, "new": 3, "already_had": 0}
    assert _sources_of(redis) == [name]


@pytest.mark.parametrize("name", ["ledger", "provider", "stripe"])
def test_the_explicit_provider_form_replays_any_source_from_its_api(
    named: None, redis: Redis, name: str
) -> None:
    result = webhooks("replay", "provider", name, "--since", str(NOW - 400), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["new"] == 3
    assert _sources_of(redis) == [name]


def test_the_ledger_form_still_replays_stored_events_of_a_source_named_ledger(
    named: None, api: FakeApi
) -> None:
    result = webhooks("replay", "ledger", "ledger", "--since", str(NOW - 400), "--json")
    assert result.exit_code == 0, result.output
    assert "requeued" in json.loads(result.stdout)  # the ledger's counts
    assert api.requests == []  # no API was asked


def test_the_ledger_form_takes_its_source_after_its_options_too(named: None, api: FakeApi) -> None:
    result = webhooks("replay", "ledger", "--since", str(NOW - 400), "--json", "inbound")
    assert result.exit_code == 0, result.output
    assert "requeued" in json.loads(result.stdout) and api.requests == []


def test_a_forgotten_ledger_source_is_named_not_sent_to_an_api(env: None, api: FakeApi) -> None:
    result = webhooks("replay", "ledger", "--since", str(NOW - 400))
    assert result.exit_code == 2
    assert "webhooks replay ledger SOURCE" in result.output
    assert api.requests == []


def test_a_ledger_only_option_without_a_source_is_the_ledger_form(env: None) -> None:
    result = webhooks("replay", "ledger", "--status", "dead", "--since", "0")
    assert result.exit_code == 2 and "Missing argument 'SOURCE'" in result.output


def test_the_ledger_forms_help_is_its_own(env: None) -> None:
    result = webhooks("replay", "ledger", "--help")
    assert result.exit_code == 0 and "--status" in result.output


def test_the_replay_help_names_the_explicit_provider_form() -> None:
    result = webhooks("replay", "--help")
    assert "provider" in result.output and "ledger" in result.output


# The tests run the command in-process, where click names it `main`, not `webhooks`.


def test_the_replay_usage_shows_both_forms_as_typed() -> None:
    result = webhooks("replay", "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "Usage: main replay SOURCE --since TIME [OPTIONS]\n"
        "       main replay ledger SOURCE --since TIME [OPTIONS]\n"
    )


def test_a_sources_help_shows_the_usage_as_it_was_typed(env: None) -> None:
    result = webhooks("replay", "stripe", "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: main replay stripe --since TIME [OPTIONS]\n")


def test_a_sources_usage_error_points_at_a_help_that_can_be_typed(env: None) -> None:
    result = webhooks("replay", "stripe")
    assert result.exit_code == 2
    assert "Try 'main replay stripe --help' for help." in result.stderr


def test_the_explicit_provider_forms_help_keeps_its_own_usage(env: None) -> None:
    result = webhooks("replay", "provider", "stripe", "--help")
    assert result.stdout.startswith("Usage: main replay provider [OPTIONS] SOURCE\n")
