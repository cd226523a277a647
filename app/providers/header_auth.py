"""Schemes where one header vouches for a JSON body and other headers name the event
(GitHub, Shopify, GitLab): the header is checked, the body must be a JSON object, the id
and type are headers, and some headers are handed on. Subclasses say which headers.

`BodyHmacVerifier` is the common case, an HMAC-SHA256 of the raw body: the header holds
`signature_prefix` then the digest in hex or base64. Nothing else is signed, so the id
(a header) is not covered by the signature: `id_signed` is False. (Not recipe presets,
though the signature is one: a recipe takes any JSON body, arrays too, and GitHub wants
its content type checked.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    event_id_from,
    event_type_from,
    header,
    parse_hex,
    pick_headers,
)
from app.providers.json_body import parse_json_object
from app.providers.recipe_spec import Encoding
from app.providers.signatures import check_hmac, decode_signatures


class HeaderAuthVerifier(Verifier, ABC):
    id_signed = False
    # The event id: the first of these headers that is set; `id_label` names it in errors.
    id_headers: tuple[str, ...] = ()
    id_label = ""
    type_header = ""
    handed_on: tuple[str, ...] = ()

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        self.authenticate(body, headers)
        parse_json_object(body)
        return Delivery(
            event_id=self.event_id(body, headers),
            event_type=event_type_from(headers.get(self.type_header)),
            headers=pick_headers(headers, self.handed_on),
        )

    # Abstract: a subclass without it cannot be built (and mypy says so), so no request
    # ever reaches a verifier that checks nothing.
    @abstractmethod
    def authenticate(self, body: bytes, headers: Mapping[str, str]) -> None:
        """Raise `InvalidSignature` unless the request is the sender's."""

    def event_id(self, body: bytes, headers: Mapping[str, str]) -> str:
        value = None
        for name in self.id_headers:
            value = value or headers.get(name)
        return event_id_from(value, self.id_label)


class BodyHmacVerifier(HeaderAuthVerifier):
    signature_header = ""  # as the provider writes it
    signature_prefix = ""
    encoding = Encoding.HEX

    def authenticate(self, body: bytes, headers: Mapping[str, str]) -> None:
        value = header(headers, self.signature_header.lower())
        decode = parse_hex if self.encoding == Encoding.HEX else b64decode
        given = decode_signatures([value], self.signature_prefix, decode, 32)
        if not given:
            raise InvalidSignature(f"malformed {self.signature_header} header")
        check_hmac(self.keys, body, given)
