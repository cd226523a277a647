"""Signers: to be filled (issue 22)."""

from __future__ import annotations

from workers.signing.base import Signer

SIGNERS: dict[str, Signer] = {}
