"""The provider names WEBHOOK_SOURCES accepts come from one table, the verifiers'
(`app.providers.VERIFIERS`): a provider added there is accepted, and nothing else is."""

from __future__ import annotations

import pytest

from app.providers import VERIFIERS
from app.settings import ConfigError, Settings
from app.settings_checks import problems
from app.sources import env_suffix

SECRET = "provider-table-secret-0123456789"


def settings(sources: str, per_source: dict[str, str] | None = None) -> Settings:
    return Settings(_env_file=None, webhook_sources=sources, per_source=per_source or {})


def unknown(name: str) -> str:
    return (
        f"WEBHOOK_SOURCES: source 'shop' names unknown provider {name!r}; "
        f"known providers: {', '.join(sorted(VERIFIERS))}"
    )


def test_a_source_may_name_every_provider_that_has_a_verifier() -> None:
    names = sorted(VERIFIERS)
    per_source = {f"WEBHOOK_SECRET_{env_suffix(name)}": SECRET for name in names}
    sources = settings(",".join(f"{name}:{name}" for name in names), per_source).sources
    assert {source.name: source.provider for source in sources.values()} == {n: n for n in names}


def test_an_unknown_provider_is_refused_with_the_known_ones_in_alphabetical_order() -> None:
    with pytest.raises(ConfigError) as raised:
        settings("shop:shopfiy", {"WEBHOOK_SECRET_SHOP": SECRET}).sources
    assert str(raised.value) == unknown("shopfiy")


def test_an_unknown_provider_is_named_before_the_secret_it_would_need() -> None:
    # A typo in the provider is the problem to fix; its missing secret would mislead.
    assert problems(settings("shop:shopfiy")) == [unknown("shopfiy")]
