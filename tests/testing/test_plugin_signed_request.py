"""`signed_request(source, payload, ...)`: `(headers, body)` signed as the provider signs,
for a project that tests its own HTTP layer; with the settings' secret or a given one."""

from __future__ import annotations

import pytest

from tests.testing.project import run, user_project

SECRET = "whsec_" + "k" * 32  # the project's own Stripe endpoint secret, in its .env


def test_a_request_signed_with_the_configured_secret_passes_stripes_own_sdk(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        f"WEBHOOK_SOURCES=stripe\nWEBHOOK_SECRET_STRIPE={SECRET}\n",
        test_user=f"""
        import stripe

        def test_my_endpoint_verifies_it(signed_request):
            headers, body = signed_request("stripe", {{"id": "in_1"}}, type="invoice.paid")
            event = stripe.Webhook.construct_event(
                body.decode(), headers["Stripe-Signature"], {SECRET!r}
            )
            assert event["type"] == "invoice.paid"
            assert event["data"]["object"]["id"] == "in_1"
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_request_signed_with_a_given_secret_fails_stripes_check_of_the_configured_one(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        f"WEBHOOK_SOURCES=stripe\nWEBHOOK_SECRET_STRIPE={SECRET}\n",
        test_user=f"""
        import pytest
        import stripe

        def test_my_endpoint_refuses_it(signed_request):
            headers, body = signed_request("stripe", secret="whsec_someone_elses")
            with pytest.raises(stripe.SignatureVerificationError):
                stripe.Webhook.construct_event(
                    body.decode(), headers["Stripe-Signature"], {SECRET!r}
                )
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_signed_request_has_the_providers_delivery_headers_and_exact_body(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=github\nWEBHOOK_SECRET_GITHUB=" + "g" * 32 + "\n",
        test_user="""
        import hashlib
        import hmac
        import json

        def test_headers_and_body(signed_request):
            request = signed_request("github", {"zen": "Keep it logically awesome."},
                                     type="ping", id="d-1")
            headers, body = request
            assert (request.headers, request.body) == (headers, body)
            assert headers["X-GitHub-Event"] == "ping"
            assert json.loads(body) == {"zen": "Keep it logically awesome."}
            expected = hmac.new(b"g" * 32, body, hashlib.sha256).hexdigest()
            assert headers["X-Hub-Signature-256"] == "sha256=" + expected
        """,
    )
    run(pytester).assert_outcomes(passed=1)
