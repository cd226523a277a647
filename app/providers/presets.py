"""Named providers that are nothing but a recipe: each is the `Recipe` a user could write
in `WEBHOOK_RECIPE_<NAME>`, given a name (a test keeps each equal to its JSON form).

Where a provider documents no event id, the id is the SHA-256 of the body (`digest`): a
retry of the same bytes is then a duplicate. An id read from a header the signature does
not cover makes the verifier's `id_signed` False (`recipe.id_covered`); those are marked.
Sources for each scheme are in docs/providers.md's table and in the tests that sign
with the provider's SDK or documented vector.
"""

from __future__ import annotations

from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.standard import standard_webhooks

# Standard Webhooks as Svix sends it (`svix-*` headers): Resend and Clerk.
SVIX = standard_webhooks("svix")

PRESETS: dict[str, Recipe] = {
    name: Recipe.model_validate(spec)
    for name, spec in {
        "intercom": {
            "signature_header": "X-Hub-Signature",
            "signature_prefix": "sha1=",
            "algorithm": "sha1",
            "id": "json:id",
            "type": "json:topic",
        },
        "typeform": {
            "signature_header": "Typeform-Signature",
            "signature_prefix": "sha256=",
            "encoding": "base64",
            "id": "json:event_id",
            "type": "json:event_type",
        },
        "lemonsqueezy": {
            "signature_header": "X-Signature",
            "id": "digest",
            "type": ["header:X-Event-Name", "json:meta.event_name"],
            "headers": ["x-event-name"],
        },
        "razorpay": {
            "signature_header": "X-Razorpay-Signature",
            # Unsigned: X-Razorpay-Event-Id is a header, and only the body is signed.
            "id": ["header:X-Razorpay-Event-Id", "digest"],
            "type": "json:event",
            "headers": ["x-razorpay-event-id"],
        },
        "sentry": {
            "signature_header": "Sentry-Hook-Signature",
            # Unsigned: Request-ID is a header, and only the body is signed.
            "id": ["header:Request-ID", "digest"],
            "type": "header:Sentry-Hook-Resource",
            "headers": ["sentry-hook-resource", "sentry-hook-timestamp", "request-id"],
        },
        "pagerduty": {
            "signature_header": "X-PagerDuty-Signature",
            "signature_separator": ",",
            "signature_prefix": "v1=",
            "id": "json:event.id",
            "type": "json:event.event_type",
            "headers": ["x-webhook-id", "x-webhook-subscription"],
        },
        "zendesk": {
            "signature_header": "X-Zendesk-Webhook-Signature",
            "encoding": "base64",
            "signed": "{timestamp}{body}",
            "timestamp": "header:X-Zendesk-Webhook-Signature-Timestamp",
            "timestamp_unit": "iso8601",
            # Unsigned when the body has no id: the invocation id header is not signed.
            "id": ["json:id", "header:X-Zendesk-Webhook-Invocation-Id", "digest"],
            "type": "json:type",
            "headers": ["x-zendesk-webhook-id", "x-zendesk-webhook-invocation-id"],
        },
        "calendly": {
            "signature_header": "Calendly-Webhook-Signature",
            "signature_separator": ",",
            "signature_key": "v1",
            "signed": "{timestamp}.{body}",
            "timestamp": "signature:t",
            "tolerance": 180,
            "id": "digest",
            "type": "json:event",
        },
        "linear": {
            "signature_header": "Linear-Signature",
            "timestamp": "json:webhookTimestamp",
            "timestamp_unit": "ms",
            "tolerance": 60,
            # Unsigned: Linear-Delivery is a header, and only the body is signed.
            "id": ["header:Linear-Delivery", "digest"],
            "type": ["header:Linear-Event", "json:type"],
            "headers": ["linear-delivery", "linear-event"],
        },
        "square": {
            "signature_header": "x-square-hmacsha256-signature",
            "encoding": "base64",
            "signed": "{url}{body}",
            "id": "json:event_id",
            "type": "json:type",
            "headers": ["square-retry-number", "square-retry-reason"],
        },
        "resend": SVIX,
        "clerk": SVIX,
    }.items()
}


def preset(name: str, recipe: Recipe) -> type[RecipeVerifier]:
    return type(
        f"{name.capitalize()}Verifier",
        (RecipeVerifier,),
        {"provider": name, "preset": recipe, "__doc__": f"`{name}`: a recipe preset."},
    )


PRESET_VERIFIERS = tuple(preset(name, recipe) for name, recipe in PRESETS.items())
