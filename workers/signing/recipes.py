"""Signers of every recipe: one generic signer that reads a `Recipe`
(`app/providers/recipe_spec.py`) as its verifier does (`recipe_signing.py`), for `recipe`
sources (the scheme in `WEBHOOK_RECIPE_<NAME>`) and for each preset of
`app/providers/presets.py`, whose envelope (sample body, delivery headers, what `data`
replaces) is in `recipe_samples.py`.

For a `recipe` source, `data` is the whole body: a JSON value (an object wherever a
`json:` locator must be written into it) or, for `"payload": "form"`, an object of
strings; the type and timestamp are set over it where the recipe reads them, and the id
unless the data has its own at the recipe's `json:` id locator: that one stays as given and
is the event id, which an id given must equal (`base.own_id`). Without
`data` the body is a JSON object (or form) holding just those, and the id, when the
recipe reads it from elsewhere, at the first `json:` id locator or else at `id`, so two
events are two bodies.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.jobstate import PayloadFormat
from app.providers.fields import json_path
from app.providers.presets import PRESETS
from app.providers.recipe_spec import Origin, Recipe, load_recipe
from app.settings import ConfigError, SourceConfig
from workers.signing.base import EventToSign, Keys, SignedRequest, Signer, SigningError, own_id
from workers.signing.envelope import Envelope
from workers.signing.recipe_samples import SAMPLES
from workers.signing.recipe_signing import set_path, sign_with_recipe


def plain_envelope(recipe: Recipe, event: EventToSign) -> Envelope:
    """A `recipe` source's body: `data` as given, else the id where the recipe reads it
    or, if that is not the body, at its first `json:` id locator or `id`."""
    if event.data is not None:
        return Envelope(event.data)
    body: dict[str, Any] = {}
    if recipe.id[0].origin != Origin.JSON:
        paths = [loc.name for loc in recipe.id if loc.origin == Origin.JSON]
        form = recipe.payload == PayloadFormat.FORM
        set_path(body, paths[0] if paths else "id", event.event_id, "recipe", form)
    return Envelope(body)


def sign_recipe(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    try:
        recipe = load_recipe(source)
    except ConfigError as exc:
        raise SigningError(str(exc)) from None
    own = None
    first = recipe.id[0]
    if event.data is not None and first.origin == Origin.JSON:
        # `data` is the whole body: an id of its own where the recipe reads it stands.
        own = own_id(event, json_path(event.data, first.name), source.name, first.name)
    if own is not None:
        event = replace(event, event_id=own)
    envelope = plain_envelope(recipe, event)
    return sign_with_recipe(
        recipe, source.name, source, event, keys, envelope, id_in_body=own is not None
    )


def preset_signer(name: str) -> Signer:
    recipe, sample = PRESETS[name], SAMPLES[name]

    def sign(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
        return sign_with_recipe(recipe, name, source, event, keys, sample(event))

    sign.__name__ = sign.__qualname__ = f"sign_{name}"
    return sign


SIGNERS: dict[str, Signer] = {
    "recipe": sign_recipe,
    **{name: preset_signer(name) for name in PRESETS},
}
