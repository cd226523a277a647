"""A user's project, written into a `pytester` directory: its `.env`, its handler module and
its test modules, run by pytest with rq-webhook-receiver's plugin (the entry point, loaded as
for any install)."""

from __future__ import annotations

import pytest

# A handler module as a user writes one, for a Stripe source and its "*" handlers.
BILLING = """
from workers import Event, PermanentError, handler

@handler("stripe", "invoice.paid")
def record_payment(event: Event) -> None:
    invoice = event.payload["data"]["object"]
    if "amount_paid" not in invoice:
        raise PermanentError("an invoice without amount_paid")
    if invoice["amount_paid"] < 0:
        raise ValueError("a negative amount")

@handler("stripe", "invoice.paid")
async def notify(event: Event) -> None:
    pass

@handler("stripe", "*")
def audit(event: Event) -> None:
    pass

@handler("stripe", "customer.subscription.updated",
         entity="data.object.id", version="data.object.version")
def apply_subscription(event: Event) -> None:
    pass
"""


def user_project(pytester: pytest.Pytester, env: str = "", **modules: str) -> None:
    """`.env` (what the project configures), then its modules (`name=source`)."""
    if env:
        (pytester.path / ".env").write_text(env)
    if modules:
        pytester.makepyfile(**modules)


# Plugins of this suite's environment that a user's project does without: hypothesis's
# summary alone costs a second per run (it imports hypothesis, which pytester drops again
# after each in-process run). Our packages, imported by this process already, cannot be
# assertion-rewritten for the inner run as they are for a user's: it warns.
ASIDE = (
    *("-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:cacheprovider"),
    *("-W", "ignore::pytest.PytestAssertRewriteWarning"),
    # pytest-asyncio (the suite's, for tests/testing/test_plugin_async.py) warns at every
    # run of a project that does not set it.
    *("-o", "asyncio_default_fixture_loop_scope=function"),
)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The project's tests, run by pytest in this process."""
    return pytester.runpytest_inprocess(*ASIDE, *args)
