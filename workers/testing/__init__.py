"""Testing handlers: what the pytest plugin's fixtures are made of (see
docs/testing.md). The fixtures come from the entry point `pytest_webhook_receiver.plugin`;
these are the types to annotate a test with:

    from workers.testing import Deliver, EventFactory, ReceiverClient, RequestSigner

    def test_paid(webhook_event: EventFactory, deliver: Deliver) -> None: ...
"""

from app.turns import HandlerState
from workers.testing.client import ReceiverClient
from workers.testing.events import WebhookTestError
from workers.testing.outcome import HandlerResult, Outcome, Status
from workers.testing.plugin import Deliver, EventFactory, RequestSigner, SignedParts

__all__ = [
    "Deliver",
    "EventFactory",
    "HandlerResult",
    "HandlerState",
    "Outcome",
    "ReceiverClient",
    "RequestSigner",
    "SignedParts",
    "Status",
    "WebhookTestError",
]
