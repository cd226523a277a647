"""`webhooks sources`: each configured source, its provider, its URL path, how many secrets
it has (never a secret) and its freshness tolerance.

A source whose secret is missing (or otherwise cannot load) is listed too, with the
variable to set: this is the command to run when startup says a source is misconfigured.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import click
from pydantic import ValidationError

from app.providers import PROVIDERS
from app.settings import ConfigError, Settings
from app.settings_checks import one_line
from app.sources import KEYLESS, Defaults, SourceConfig, resolve_sources
from workers.ops.common import CommandError, json_option, plural, print_listing
from workers.ops.target import resolve_target


@dataclass(frozen=True, slots=True)
class SourceLine:
    name: str
    provider: str
    path: str
    secrets: int
    secret_set: bool
    # Seconds of timestamp skew accepted, where the scheme signs a timestamp: the
    # provider's documented window or REPLAY_TOLERANCE[_<NAME>]. None when it cannot load.
    tolerance: int | None
    problem: str = ""  # why it cannot load (the variable to set), never a value


@click.command()
@json_option("One JSON object per source.")
def sources(as_json: bool) -> None:
    """The configured sources: provider, URL path, secrets (counted, never shown)."""
    settings = _settings()
    lines = [_line(entry, settings) for entry in settings.webhook_sources]
    print_listing(
        lines,
        as_json,
        asdict,
        ("SOURCE", "PROVIDER", "PATH", "SECRETS", "TOLERANCE", "PROBLEM"),
        lambda s: (
            s.name,
            s.provider,
            s.path,
            s.secrets if s.secret_set else "missing",
            f"{s.tolerance} s" if s.tolerance else "-",
            s.problem or "-",
        ),
        plural(len(lines), "source"),
    )


def _settings() -> Settings:
    """The settings as loaded without the per-source checks: a source that cannot load
    is this command's to show, not to stop at."""
    try:
        return Settings(**resolve_target().overrides)
    except ValidationError as exc:
        raise CommandError(one_line(exc)) from None


def _line(entry: str, settings: Settings) -> SourceLine:
    name, _, provider = entry.partition(":")
    name = name.strip()
    defaults = Defaults(
        settings.replay_tolerance, settings.webhook_dedupe_ttl, settings.webhook_signing_secret
    )
    try:
        [source] = resolve_sources([entry], settings.per_source, defaults, PROVIDERS).values()
    except ConfigError as exc:
        path = f"/webhooks/{name}"
        return SourceLine(name, provider.strip() or name, path, 0, False, None, str(exc))
    tolerance, problem = _verifier_view(source, settings)
    return SourceLine(
        source.name,
        source.provider,
        f"/webhooks/{source.name}",
        len(source.secrets),
        bool(source.secrets) or source.provider in KEYLESS,
        tolerance,
        problem,
    )


def _verifier_view(source: SourceConfig, settings: Settings) -> tuple[int | None, str]:
    """The window the verifier applies, or what stops it from building (a bad key, a
    short secret), as startup would say it."""
    from app.keyfetch import KeyFetcher
    from app.providers import verifier_for
    from app.providers.secret_strength import check_secret_strength

    try:
        verifier = verifier_for(source, KeyFetcher.from_settings(settings))
        check_secret_strength(source, verifier.keys)
    except ConfigError as exc:
        return None, str(exc)
    return int(getattr(verifier, "tolerance", source.tolerance)), ""
