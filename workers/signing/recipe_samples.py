# ruff: noqa: E501 - the table's rows are one line each
"""The envelope of each recipe preset: a realistic minimal body and the delivery headers
the provider sends, around the event object that `data` replaces (None keeps the sample).
`recipe_signing.py` then sets the id, type and timestamp where the preset's recipe reads
them, over any value `data` holds there, and signs.

| preset | `data` replaces | event id sent as | answered id | type sent as |
|---|---|---|---|---|
| `calendly` | `payload` (the invitee) | the sample invitee's `uri` | `sha256:` digest of the body | `event` |
| `clerk` | `data` (the user...) | `svix-id` | the id | `type` |
| `intercom` | `data.item` (the conversation, contact...) | `id` | the id | `topic` |
| `lemonsqueezy` | `data` (the JSON:API resource) | the sample resource's `id` | `sha256:` digest of the body | `X-Event-Name`, `meta.event_name` |
| `linear` | `data` (the issue...) | `Linear-Delivery` | the id | `Linear-Event`, `type` |
| `pagerduty` | `event.data` (the incident...) | `event.id` | the id | `event.event_type` |
| `razorpay` | `payload` (`{"payment": {"entity": {...}}}`; `contains` lists its keys) | `X-Razorpay-Event-Id` | the id | `event` |
| `resend` | `data` (the email) | `svix-id` | the id | `type` |
| `sentry` | `data` (`{"<resource>": {...}}`) | `Request-ID` | the id | `Sentry-Hook-Resource` |
| `square` | `data.object` (`{"payment": {...}}`; `data.type`, `data.id` follow it) | `event_id` | the id | `type` |
| `typeform` | `form_response` | `event_id` | the id | `event_type` |
| `zendesk` | `detail` (the ticket...; `subject` follows its `id`) | `id` | the id | `type` |

The envelopes, by where the preset's event id is: in the signed body
(`recipe_samples_body_ids`), a header (`recipe_samples_header_ids`), or nowhere: the body's
digest (`recipe_samples_digest_ids`).
"""

from __future__ import annotations

from collections.abc import Callable

from workers.signing.base import EventToSign
from workers.signing.envelope import Envelope
from workers.signing.recipe_samples_body_ids import intercom, pagerduty, square, typeform, zendesk
from workers.signing.recipe_samples_digest_ids import calendly, lemonsqueezy
from workers.signing.recipe_samples_header_ids import clerk, linear, razorpay, resend, sentry

SAMPLES: dict[str, Callable[[EventToSign], Envelope]] = {
    "calendly": calendly,
    "clerk": clerk,
    "intercom": intercom,
    "lemonsqueezy": lemonsqueezy,
    "linear": linear,
    "pagerduty": pagerduty,
    "razorpay": razorpay,
    "resend": resend,
    "sentry": sentry,
    "square": square,
    "typeform": typeform,
    "zendesk": zendesk,
}
