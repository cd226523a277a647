"""Settings: sources, per-source variables, and startup errors that name the variable."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from app.settings import ConfigError, Settings

ROOT = Path(__file__).resolve().parent.parent


# Long enough for every scheme's minimum (app/providers/secret_strength.py).
S = "seed-article-secret-0123"


def load(**values: object) -> Settings:
    return Settings.load(_env_file=None, **values)


def test_default_source_is_inbound_with_the_seed_articles_secret() -> None:
    settings = load(webhook_signing_secret=S)
    source = settings.sources["inbound"]
    assert (source.provider, [s.get_secret_value() for s in source.secrets]) == ("hmac", [S])


def test_missing_secret_is_a_startup_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET_BILLING_EU is not set"):
        load(webhook_sources="billing-eu:hmac")


def test_secrets_are_read_per_source_and_comma_separated_for_rotation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", "shop:hmac, inbound:hmac")
    monkeypatch.setenv("WEBHOOK_SECRET_SHOP", "old-secret-0123456789, new-secret-0123456789")
    monkeypatch.setenv("WEBHOOK_SECRET_INBOUND", S)
    settings = load()
    assert [s.get_secret_value() for s in settings.sources["shop"].secrets] == [
        "old-secret-0123456789",
        "new-secret-0123456789",
    ]
    assert settings.sources["inbound"].provider == "hmac"


@pytest.mark.parametrize(
    ("provider", "secret"),
    [
        ("hmac", "x"),
        ("github", "short-secret"),
        ("standard", "whsec_" + base64.b64encode(b"ten bytes!").decode()),  # long, 10 decoded
        ("adyen", "00" * 15),
        ("twitch", "nine char"),
    ],
)
def test_a_secret_shorter_than_its_schemes_minimum_stops_startup_without_showing_it(
    provider: str, secret: str
) -> None:
    # The attacker's side: a short key is guessed offline from one captured signature.
    with pytest.raises(ConfigError) as raised:
        load(webhook_sources=f"acme:{provider}", per_source={"WEBHOOK_SECRET_ACME": secret})
    message = str(raised.value)
    assert message.startswith("WEBHOOK_SECRET_ACME: a secret is shorter than"), message
    assert secret not in message and "\n" not in message


@pytest.mark.parametrize(
    ("provider", "secret"),
    [("twitch", "ten chars!"), ("lemonsqueezy", "six ch"), ("dropbox", "abcdefghij12345")],
)
def test_a_provider_whose_own_secrets_are_shorter_keeps_its_own_minimum(
    provider: str, secret: str
) -> None:
    settings = load(webhook_sources=f"acme:{provider}", per_source={"WEBHOOK_SECRET_ACME": secret})
    assert settings.sources["acme"].secrets[0].get_secret_value() == secret


def test_a_secret_with_a_comma_split_into_short_fragments_stops_startup_with_the_json_form() -> (
    None
):
    # A generator with punctuation (a password manager's, for a GitHub secret): read as a
    # rotation list, the fragments would be weak keys while the real secret never verifies.
    generated = "Zq8,Lm3#vX,pR7!tY2@uW9$kE5%"
    with pytest.raises(ConfigError) as raised:
        load(webhook_sources="gh:github", per_source={"WEBHOOK_SECRET_GH": generated})
    message = str(raised.value)
    assert "shorter than" in message and "JSON list" in message, message
    assert all(part not in message for part in generated.split(","))


def test_a_woocommerce_secret_with_a_comma_is_never_split_even_into_long_fragments() -> None:
    # Two 20-character fragments would pass the minimum, and every genuine delivery would
    # then be a 401 with nothing said at startup.
    generated = "Zq8#Lm3$vXpR7!tY2@uW,9kE5%aB1^cD3&eF7*gH"
    with pytest.raises(ConfigError) as raised:
        load(webhook_sources="woo:woocommerce", per_source={"WEBHOOK_SECRET_WOO": generated})
    message = str(raised.value)
    assert "JSON list" in message and generated not in message, message
    assert all(part not in message for part in generated.split(","))


def test_a_json_list_of_secrets_keeps_their_commas() -> None:
    secrets = ["Zq8,Lm3#vX,pR7!tY2@uW9$kE5%", "second-secret-0123456789"]
    settings = load(
        webhook_sources="woo:woocommerce", per_source={"WEBHOOK_SECRET_WOO": json.dumps(secrets)}
    )
    assert [s.get_secret_value() for s in settings.sources["woo"].secrets] == secrets


def test_a_secret_list_that_is_not_valid_json_stops_startup() -> None:
    with pytest.raises(ConfigError, match=r"^WEBHOOK_SECRET_WOO starts with '\[' but is not"):
        load(webhook_sources="woo:woocommerce", per_source={"WEBHOOK_SECRET_WOO": '["a",'})


def test_per_source_tolerance_and_dedupe_ttl_override_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET_INBOUND", S)
    monkeypatch.setenv("REPLAY_TOLERANCE_INBOUND", "42")
    monkeypatch.setenv("WEBHOOK_DEDUPE_TTL_INBOUND", "259200")
    source = load(replay_tolerance=300, webhook_dedupe_ttl=10).sources["inbound"]
    assert (source.tolerance, source.dedupe_ttl) == (42, 259200)


def test_expected_silence_has_a_default_a_per_source_override_and_zero_for_never(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET_NIGHTLY", S)
    monkeypatch.setenv("WEBHOOK_SECRET_AUDIT", S)
    monkeypatch.setenv("WEBHOOK_EXPECTED_SILENCE_NIGHTLY", "172800")
    monkeypatch.setenv("WEBHOOK_EXPECTED_SILENCE_AUDIT", "0")
    sources = load(webhook_signing_secret=S, webhook_sources="inbound,nightly:hmac,audit:hmac")
    assert {n: s.expected_silence for n, s in sources.sources.items()} == {
        "inbound": 21_600,
        "nightly": 172_800,
        "audit": 0,
    }


def test_per_source_variables_are_read_from_the_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("WEBHOOK_SOURCES=shop:hmac\nWEBHOOK_SECRET_SHOP=from-the-env-file-0123\n")
    settings = Settings.load(_env_file=env_file)
    assert settings.sources["shop"].secrets[0].get_secret_value() == "from-the-env-file-0123"


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
        load(webhook_sources=sources, webhook_signing_secret=S)


def test_a_source_listed_twice_without_its_secret_is_said_listed_twice_and_unset_once() -> None:
    with pytest.raises(ConfigError) as refused:
        load(webhook_sources="stripe,stripe")
    message = str(refused.value)
    assert message.count("WEBHOOK_SECRET_STRIPE is not set") == 1, message
    assert "source 'stripe' is listed twice" in message, message


def test_non_numeric_per_source_tolerance_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPLAY_TOLERANCE_INBOUND", "soon")
    with pytest.raises(ConfigError, match="REPLAY_TOLERANCE_INBOUND"):
        load(webhook_signing_secret=S)


def test_retry_intervals_repeat_the_last_value_up_to_max_retries() -> None:
    settings = load(webhook_signing_secret=S, webhook_retry_intervals="1,5", webhook_max_retries=4)
    assert settings.retry_intervals == [1, 5, 5, 5]


@pytest.mark.parametrize(
    ("intervals", "message"),
    [
        ("", "WEBHOOK_RETRY_INTERVALS: needs at least one value"),
        (" , ", "WEBHOOK_RETRY_INTERVALS: needs at least one value"),
        ("5,-1", "WEBHOOK_RETRY_INTERVALS: must be seconds >= 0"),
    ],
)
def test_retry_intervals_that_are_empty_or_negative_stop_startup(
    intervals: str, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load(webhook_signing_secret=S, webhook_retry_intervals=intervals)
    assert message in str(refused.value)


def test_retry_intervals_are_cut_to_max_retries() -> None:
    settings = load(
        webhook_signing_secret=S, webhook_retry_intervals="1,5,9", webhook_max_retries=2
    )
    assert settings.retry_intervals == [1, 5]


def test_secrets_do_not_appear_in_the_settings_repr() -> None:
    settings = load(webhook_signing_secret="very-secret-value")
    assert "very-secret-value" not in repr(settings)
    assert "very-secret-value" not in repr(settings.sources)


@pytest.mark.parametrize("token", ["", "  "])
def test_an_empty_replay_token_means_replay_is_off(token: str) -> None:
    assert load(webhook_signing_secret=S, webhook_replay_token=token).webhook_replay_token is None


def test_a_short_replay_token_stops_startup_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="WEBHOOK_REPLAY_TOKEN must be at least 32"):
        load(webhook_signing_secret=S, webhook_replay_token="x" * 31)


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
        load(webhook_signing_secret=S, webhook_dedupe_ttl="soon-ish")
    message = str(error.value)
    assert message.startswith("WEBHOOK_DEDUPE_TTL:") and "\n" not in message
    assert "soon-ish" not in message
