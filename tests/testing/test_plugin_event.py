"""`webhook_event(...)`: the `Event` exactly as a handler receives it, from a request that the
provider's signer made and the source's verifier accepted."""

from __future__ import annotations

import pytest

from app.providers import PROVIDERS
from tests.testing.project import run, user_project

# docs/providers.md's worked recipe, for the source of provider `recipe`.
RECIPE = (
    '{"signature_header": "X-Acme-Signature", "signature_separator": ",", '
    '"signature_key": "v1", "signed": "{timestamp}.{body}", "timestamp": "signature:t", '
    '"id": "header:X-Acme-Delivery", "type": "json:kind", "headers": ["x-acme-delivery"]}'
)


def test_webhook_event_carries_the_envelope_payload_kept_headers_and_attempt(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=stripe,github\n",
        test_user="""
        import json
        from datetime import UTC, datetime, timedelta

        def test_stripe(webhook_event):
            event = webhook_event("stripe", "invoice.paid", {"id": "in_1"}, id="evt_1", attempt=3)
            assert (event.source, event.id, event.type, event.attempt) == (
                "stripe", "evt_1", "invoice.paid", 3
            )
            assert event.payload["object"] == "event"  # Stripe's envelope around it
            assert event.payload["data"]["object"] == {"id": "in_1"}
            assert json.loads(event.raw) == event.payload
            assert event.received_at.tzinfo is UTC
            assert datetime.now(UTC) - event.received_at < timedelta(minutes=1)

        def test_github(webhook_event):
            event = webhook_event("github", "issues", {"action": "opened"})
            assert event.type == "issues" and event.payload == {"action": "opened"}
            assert event.headers["x-github-event"] == "issues"
            assert event.id == event.headers["x-github-delivery"]
            assert not [name for name in event.headers if "signature" in name]
        """,
    )
    run(pytester).assert_outcomes(passed=2)


def test_webhook_event_builds_an_event_for_a_source_of_every_provider_without_secrets(
    pytester: pytest.Pytester,
) -> None:
    # As a user's .env would say it: the sources, the recipe's scheme, not one secret or key.
    user_project(
        pytester,
        f"WEBHOOK_SOURCES={','.join(PROVIDERS)}\nWEBHOOK_RECIPE_RECIPE='{RECIPE}'\n",
        test_user=f"""
        import pytest

        @pytest.mark.parametrize("source", {list(PROVIDERS)!r})
        def test_every_provider(webhook_event, source):
            event = webhook_event(source, id="evt_" + source)
            assert event.source == source and event.id and event.raw and event.attempt == 1
        """,
    )
    run(pytester).assert_outcomes(passed=len(PROVIDERS))


def test_a_header_the_verifier_keeps_reaches_the_event(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=shop:shopify\n",
        test_user="""
        def test_domain(webhook_event):
            event = webhook_event("shop", headers={"X-Shopify-Shop-Domain": "b.myshopify.com"})
            assert event.headers["x-shopify-shop-domain"] == "b.myshopify.com"
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_header_the_verifier_does_not_keep_is_refused_saying_what_it_keeps(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=shop:shopify\n",
        test_user="""
        def test_unknown_header(webhook_event):
            webhook_event("shop", headers={"X-Request-Id": "r-1"})
        """,
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*WebhookTestError: shopify's verifier hands no X-Request-Id header to handlers "
            "(it keeps: x-shopify-api-version, *): a handler never sees it"
        ]
    )


def test_an_unknown_source_is_refused_naming_the_configured_ones(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=stripe\n",
        test_user="""
        def test_unknown(webhook_event):
            webhook_event("paypal")
        """,
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*unknown source 'paypal'; configured: stripe*"])


def test_a_handshake_is_refused_as_never_given_to_a_handler(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=interactions:discord\n",
        test_user="""
        def test_ping(webhook_event):
            webhook_event("interactions", "ping")
        """,
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a discord 'ping' request is a handshake*"])


def test_the_settings_marker_overrides_the_environment_closest_first(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=stripe\n",
        test_user="""
        import pytest

        pytestmark = pytest.mark.webhooks_settings(WEBHOOK_SOURCES="github")

        def test_module_marker(webhook_event):
            assert webhook_event("github").source == "github"

        @pytest.mark.webhooks_settings(webhook_sources="shop:shopify")
        def test_own_marker(webhook_event):
            assert webhook_event("shop").source == "shop"

        def test_environment_replaced(webhook_event):
            webhook_event("stripe")
        """,
    )
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*unknown source 'stripe'; configured: github*"])


def test_settings_that_do_not_load_fail_the_test_in_one_line(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=shop:shopfiy\n",
        test_user="""
        def test_typo(webhook_event):
            webhook_event("shop")
        """,
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "rq-webhook-receiver settings: WEBHOOK_SOURCES: source 'shop' names "
            "unknown provider 'shopfiy'; known providers: *"
        ]
    )
