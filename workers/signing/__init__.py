"""One signer per provider, the mirror of its verifier: `SIGNERS[provider]`.

Each module signs one family of schemes: HMACs in headers (`header_hmac`), the URL-signed
and in-body schemes (`url_and_body`), every recipe and preset (`recipes`), and the
asymmetric ones, which sign with a private key (`asymmetric`). Where the verifier runs a
recipe (the presets, `recipe` sources, Stripe, Slack, Paddle, Standard Webhooks), the
signer signs from that recipe (`recipe_signing`). A test fails when a provider has a
verifier and no signer.
"""

from __future__ import annotations

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

__all__ = [
    "PRIVATE_KEY_PROVIDERS",
    "SIGNERS",
    "EventToSign",
    "Keys",
    "SignedRequest",
    "Signer",
    "SigningError",
]
