"""Testing handlers: what the pytest plugin's fixtures are made of (see the README's
"Testing your handlers"). The fixtures come from the entry point `pytest_webhook_receiver`;
these are the types to annotate a test with:

    from workers.testing import Outcome, ReceiverClient
"""

from workers.registry import HandlerState
from workers.testing.client import ReceiverClient
from workers.testing.events import WebhookTestError
from workers.testing.outcome import HandlerResult, Outcome, Status
from workers.testing.plugin import SignedParts

__all__ = [
    "HandlerResult",
    "HandlerState",
    "Outcome",
    "ReceiverClient",
    "SignedParts",
    "Status",
    "WebhookTestError",
]
