"""The errors a delivery is refused with: each carries its HTTP status, a reason (the
`webhooks_rejected_total` label) and a safe detail.

Details are fixed strings or describe the request's shape, never a secret or payload bytes.
`app/ingress.py`'s `rejected` turns them into `{"detail": ...}` answers, for the delivery
route and (through `main.py`'s exception handler) the others. A key fetch's refusal lives
with the fetching (`app/keyfetch.py`'s `KeyUnavailable`), configuration errors with the
settings (`app/sources.py`'s `ConfigError`).
"""

from __future__ import annotations


class WebhookError(Exception):
    status_code = 400
    reason = "bad_request"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidSignature(WebhookError):
    status_code = 401
    reason = "invalid_signature"


class StaleTimestamp(WebhookError):
    status_code = 400
    reason = "stale_timestamp"


class InvalidPayload(WebhookError):
    status_code = 400
    reason = "invalid_payload"


class UnknownSource(WebhookError):
    status_code = 404
    reason = "unknown_source"


class BodyTooLarge(WebhookError):
    status_code = 413
    reason = "body_too_large"


class QueueUnavailable(WebhookError):
    """Redis could not be reached or did not answer: nothing was accepted, the sender retries."""

    status_code = 503
    reason = "queue_unavailable"


class ReplicasBehind(QueueUnavailable):
    """Fewer replicas than WEBHOOK_REPLICA_ACKS acknowledged the claim in time: a 503 like
    any Redis failure, counted apart so that its alert points at the replicas."""

    reason = "not_replicated"


class InternalError(WebhookError):
    """Never raised: the reason under which a request that raised something unexpected
    (answered 500 by the server) is counted, so the 5xx alert sees it."""

    status_code = 500
    reason = "internal_error"
