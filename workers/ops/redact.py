"""The redactor under the name the operator's commands first imported it by.

It lives in `app/redact.py`: the worker's Sentry reports blank the same secrets, and the
worker may not import `workers.ops`. `replay_cli.py` still imports it from here.
"""

from app.redact import MARKER, Redactor, configured_secrets

__all__ = ["MARKER", "Redactor", "configured_secrets"]
