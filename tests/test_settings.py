"""Settings: sources, per-source variables, and startup errors that name the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import ConfigError, Settings

ROOT = Path(__file__).resolve().parent.parent


def load(**values: object) -> Settings:
    return Settings.load(_env_file=None, **values)


def test_default_source_is_inbound_with_the_seed_articles_secret() -> None:
    settings = load(webhook_signing_secret="s")
    source = settings.sources["inbound"]
    assert (source.provider, [s.get_secret_value() for s in source.secrets]) == ("hmac", ["s"])


def test_missing_secret_is_a_startup_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET_BILLING_EU is not set"):
        load(webhook_sources="billing-eu:hmac")


def test_secrets_are_read_per_source_and_comma_separated_for_rotation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", "shop:hmac, inbound:hmac")
    monkeypatch.setenv("WEBHOOK_SECRET_SHOP", "old, new")
    monkeypatch.setenv("WEBHOOK_SECRET_INBOUND", "a")
    settings = load()
    assert [s.get_secret_value() for s in settings.sources["shop"].secrets] == ["old", "new"]
    assert settings.sources["inbound"].provider == "hmac"


def test_per_source_tolerance_and_dedupe_ttl_override_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET_INBOUND", "a")
    monkeypatch.setenv("REPLAY_TOLERANCE_INBOUND", "42")
    monkeypatch.setenv("WEBHOOK_DEDUPE_TTL_INBOUND", "259200")
    source = load(replay_tolerance=300, webhook_dedupe_ttl=10).sources["inbound"]
    assert (source.tolerance, source.dedupe_ttl) == (42, 259200)


def test_per_source_variables_are_read_from_the_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("WEBHOOK_SOURCES=shop:hmac\nWEBHOOK_SECRET_SHOP=from-file\n")
    settings = Settings.load(_env_file=env_file)
    assert settings.sources["shop"].secrets[0].get_secret_value() == "from-file"


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ("inbound:nosuch", "unknown provider 'nosuch'"),
        ("Bad Name:hmac", "not a valid source name"),
        ("inbound:hmac,inbound:hmac", "listed twice"),
        ("", "WEBHOOK_SOURCES is empty"),
    ],
)
def test_invalid_sources_are_refused(sources: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(webhook_sources=sources, webhook_signing_secret="s")


def test_non_numeric_per_source_tolerance_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPLAY_TOLERANCE_INBOUND", "soon")
    with pytest.raises(ConfigError, match="REPLAY_TOLERANCE_INBOUND"):
        load(webhook_signing_secret="s")


def test_retry_intervals_repeat_the_last_value_up_to_max_retries() -> None:
    settings = load(
        webhook_signing_secret="s", webhook_retry_intervals="1,5", webhook_max_retries=4
    )
    assert settings.retry_intervals == [1, 5, 5, 5]


def test_retry_intervals_are_cut_to_max_retries() -> None:
    settings = load(
        webhook_signing_secret="s", webhook_retry_intervals="1,5,9", webhook_max_retries=2
    )
    assert settings.retry_intervals == [1, 5]


def test_secrets_do_not_appear_in_the_settings_repr() -> None:
    settings = load(webhook_signing_secret="very-secret-value")
    assert "very-secret-value" not in repr(settings)
    assert "very-secret-value" not in repr(settings.sources)


def test_every_provider_settings_accept_has_a_verifier() -> None:
    from app.providers import VERIFIERS
    from app.settings import PROVIDERS

    assert set(PROVIDERS) == set(VERIFIERS)


@pytest.mark.parametrize("token", ["", "  "])
def test_an_empty_replay_token_means_replay_is_off(token: str) -> None:
    assert load(webhook_signing_secret="s", webhook_replay_token=token).webhook_replay_token is None


def test_a_short_replay_token_stops_startup_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="WEBHOOK_REPLAY_TOKEN must be at least 32"):
        load(webhook_signing_secret="s", webhook_replay_token="x" * 31)


def env_example_placeholders() -> list[tuple[str, str]]:
    """Every secret-looking value of .env.example, commented out or not."""
    found = []
    for line in (ROOT / ".env.example").read_text().splitlines():
        name, equals, value = line.lstrip("# ").partition("=")
        secret = name.startswith("WEBHOOK_SECRET_") or name.endswith(
            ("_SECRET", "_PASSWORD", "_TOKEN", "_API_KEY")
        )
        if equals and value and secret:
            found.append((name, value))
    return found


@pytest.mark.parametrize(("variable", "value"), env_example_placeholders())
def test_every_placeholder_of_env_example_stops_startup_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", "a-real-secret")
    if variable.startswith("WEBHOOK_SECRET_"):
        source = variable.removeprefix("WEBHOOK_SECRET_").lower()
        monkeypatch.setenv("WEBHOOK_SOURCES", f"inbound:hmac,{source}:hmac")
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=f"^{variable} is still the placeholder") as error:
        load()
    assert value not in str(error.value)


def test_a_malformed_setting_is_one_line_naming_the_variable_without_its_value() -> None:
    with pytest.raises(ConfigError) as error:
        load(webhook_signing_secret="s", webhook_dedupe_ttl="soon-ish")
    message = str(error.value)
    assert message.startswith("WEBHOOK_DEDUPE_TTL:") and "\n" not in message
    assert "soon-ish" not in message
