"""One signer per provider, the mirror of its verifier: `SIGNERS[provider]`.

Each module signs one family of schemes: HMACs in headers (`header_hmac`), the URL-signed
and in-body schemes (`url_and_body`), every recipe and preset (`recipes`), and the
asymmetric ones, which sign with a private key (`asymmetric`). Where the verifier runs a
recipe (the presets, `recipe` sources, Stripe, Slack, Paddle, Standard Webhooks), the
signer signs from that recipe (`recipe_signing`). A test fails when a provider has a
verifier and no signer.
"""

from __future__ import annotations

from dataclasses import replace

from app.settings import SourceConfig
from workers.signing import asymmetric, header_hmac, recipes, url_and_body
from workers.signing.base import EventToSign, Keys, SignedRequest, Signer, SigningError

SIGNERS: dict[str, Signer] = {
    **header_hmac.SIGNERS,
    **url_and_body.SIGNERS,
    **recipes.SIGNERS,
    **asymmetric.SIGNERS,
}
# The providers that sign with a private key (`Keys.private_key`), never with a secret.
PRIVATE_KEY_PROVIDERS = frozenset(asymmetric.SIGNERS)


def sign(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    """The request `source`'s provider would send for `event`; a SigningError when an id
    given can have no part in it.

    Where the receiver's id is the body's digest (Dropbox, Meta, a SendGrid batch...), an
    id given is the sample's seed (its own ids derive from it) or the data's own id; data
    that is the whole body and holds it nowhere leaves it out entirely, and the event the
    user named `evt_1` would arrive as `sha256:...` with nothing of `evt_1` in it."""
    request = SIGNERS[source.provider](source, event, keys)
    if not event.id_given or request.event_id == event.event_id:
        return request
    if event.event_id in request.body.decode("utf-8", "replace") or any(
        event.event_id in value for value in request.headers.values()
    ):
        return request
    # Signed again for another id: a body that does not change never depended on it.
    other = replace(event, event_id=f"{event.event_id}-other", id_given=False)
    if SIGNERS[source.provider](source, other, keys).body != request.body:
        return request
    raise SigningError(
        f"{source.provider}: the event id is the body's digest ({request.event_id}) and the "
        f"data given is the whole body: the id given, {event.event_id!r}, would be in none "
        "of it; give none, or put it in the data"
    )


__all__ = [
    "PRIVATE_KEY_PROVIDERS",
    "SIGNERS",
    "EventToSign",
    "Keys",
    "SignedRequest",
    "Signer",
    "SigningError",
    "sign",
]
