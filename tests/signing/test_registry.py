"""Every provider that has a verifier has a signer, and a type `webhooks send` defaults to."""

from __future__ import annotations

from app.providers import PROVIDERS, VERIFIERS
from workers.signing import SIGNERS
from workers.signing.defaults import DEFAULT_TYPE


def test_every_provider_with_a_verifier_has_a_signer() -> None:
    assert sorted(set(VERIFIERS) - set(SIGNERS)) == []
    assert sorted(set(SIGNERS) - set(VERIFIERS)) == []


def test_every_provider_has_a_default_type_to_send() -> None:
    assert sorted(DEFAULT_TYPE) == sorted(PROVIDERS)
