"""The redactor, under the name the operator's tools import it by (the dashboard, `webhooks
replay`).

It lives in `app/redact.py`: the worker's Sentry reports blank the same secrets, and the
worker may not import `workers.ops` (tests/test_layout.py).
"""

from app.redact import MARKER, Redactor, configured_secrets

__all__ = ["MARKER", "Redactor", "configured_secrets"]
