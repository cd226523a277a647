"""`deliver(event)`: the registered handlers run in-process as the worker runs them, and an
outcome that names each handler by its function name."""

from __future__ import annotations

import pytest

from tests.testing.project import BILLING, run, user_project

ENV = "WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=billing\n"


def test_deliver_runs_the_types_handlers_then_the_wildcard_ones_and_names_each_done(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        ENV,
        billing=BILLING,
        test_user="""
        def test_paid(webhook_event, deliver):
            outcome = deliver(webhook_event("stripe", "invoice.paid", {"amount_paid": 5}))
            assert outcome.status == "done"
            assert list(outcome.states.items()) == [
                ("record_payment", "done"), ("notify", "done"), ("audit", "done")
            ]
            assert outcome.error is None and not outcome.permanent
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_failing_handler_is_failed_with_its_exception_and_the_next_ones_still_run(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        ENV,
        billing=BILLING,
        test_user="""
        def test_negative(webhook_event, deliver):
            outcome = deliver(webhook_event("stripe", "invoice.paid", {"amount_paid": -1}))
            assert outcome.status == "failed" and not outcome.permanent
            assert outcome.states == {
                "record_payment": "failed", "notify": "done", "audit": "done"
            }
            assert isinstance(outcome["record_payment"].error, ValueError)
            assert outcome.error is outcome["record_payment"].error
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_permanent_error_is_an_outcome_dead_lettered_at_once(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        ENV,
        billing=BILLING,
        test_user="""
        def test_no_amount(webhook_event, deliver):
            outcome = deliver(webhook_event("stripe", "invoice.paid", {"id": "in_1"}))
            assert outcome.status == "failed" and outcome.permanent
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_an_older_version_delivered_after_a_newer_one_is_stale(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        ENV,
        billing=BILLING,
        test_user="""
        def test_reordered(webhook_event, deliver):
            def update(version):
                return webhook_event("stripe", "customer.subscription.updated",
                                     {"id": "sub_1", "version": version})
            newer, older = update(2), update(1)
            assert deliver(newer).states == {"apply_subscription": "done", "audit": "done"}
            again = deliver(older)
            assert again.states == {"apply_subscription": "stale", "audit": "done"}
            assert again.status == "done"  # audit ran
            assert deliver(newer).states["apply_subscription"] == "done"  # its own retry
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_an_event_whose_only_handler_is_guarded_and_older_is_stale(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=stripe\n",
        test_user="""
        from workers import handler

        @handler("stripe", "customer.updated", entity="data.object.id", version="created")
        def sync_customer(event):
            pass

        def test_stale(webhook_event, deliver):
            event = webhook_event("stripe", "customer.updated", {"id": "cus_1"})
            assert deliver(event).status == "done"
            other = webhook_event("stripe", "customer.updated", {"id": "cus_1"})  # same second
            assert deliver(other).status == "stale"
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_an_event_no_handler_matches_is_ignored(pytester: pytest.Pytester) -> None:
    user_project(
        pytester,
        "WEBHOOK_SOURCES=stripe,github\nWEBHOOK_HANDLERS=billing\n",
        billing=BILLING,
        test_user="""
        def test_nobody(webhook_event, deliver):
            outcome = deliver(webhook_event("github", "push"))
            assert outcome.status == "ignored" and outcome.handlers == ()
        """,
    )
    run(pytester).assert_outcomes(passed=1)


def test_a_users_wrong_expectation_fails_showing_each_handlers_state(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        ENV,
        billing=BILLING,
        test_user="""
        def test_expects_done(webhook_event, deliver):
            outcome = deliver(webhook_event("stripe", "invoice.paid", {"amount_paid": -1}))
            assert outcome.status == "done", outcome
        """,
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*<Outcome failed of stripe 'invoice.paid' *: [[]record_payment: failed "
            "(ValueError: a negative amount), notify: done, audit: done[]]>*"
        ]
    )


def test_handlers_a_test_registers_in_its_body_are_gone_after_it(
    pytester: pytest.Pytester,
) -> None:
    user_project(
        pytester,
        ENV,
        billing=BILLING,
        test_user="""
        from workers import handler

        def test_a_local_handler(webhook_event, deliver):
            @handler("stripe", "invoice.paid")
            def local(event):
                pass
            event = webhook_event("stripe", "invoice.paid", {"amount_paid": 1})
            assert "local" in deliver(event).states

        def test_after_it(webhook_event, deliver):
            event = webhook_event("stripe", "invoice.paid", {"amount_paid": 1})
            assert list(deliver(event).states) == ["record_payment", "notify", "audit"]
        """,
    )
    run(pytester).assert_outcomes(passed=2)
