"""The redactor of `webhooks replay`: each secret out of any text, in every form an API
might quote it in."""

from __future__ import annotations

from collections.abc import Callable

from app.redact import MARKER, Redactor, configured_secrets
from app.settings import Settings


def test_a_secret_is_replaced_as_written_percent_encoded_and_json_escaped() -> None:
    redact = Redactor(['p@ss/wo"rd'])
    assert redact('raw p@ss/wo"rd') == f"raw {MARKER}"
    assert redact("url p%40ss%2Fwo%22rd") == f"url {MARKER}"
    assert redact('json "p@ss/wo\\"rd"') == f'json "{MARKER}"'


def test_a_secret_inside_a_longer_one_leaves_nothing_of_the_longer_behind() -> None:
    redact = Redactor(["key-1", "key-1-and-more"])
    assert redact("sent key-1-and-more") == f"sent {MARKER}"


def test_no_secrets_leave_the_text_as_it_is() -> None:
    assert Redactor([])("nothing to hide") == "nothing to hide"


def test_the_redis_password_is_known_as_configured_and_decoded(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(redis_url="redis://:p%40ss@127.0.0.1:1/0")
    assert {"p%40ss", "p@ss"} <= set(configured_secrets(settings))


def test_every_secret_field_of_the_settings_is_known_without_listing_it(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(stripe_api_key="sk_a", github_token="ghp_b")
    assert {"sk_a", "ghp_b", "dashboard-password"} <= set(configured_secrets(settings))


def test_a_credential_in_a_collectors_endpoint_url_is_redacted_in_free_text(
    make_settings: Callable[..., Settings],
) -> None:
    """A collector's token in OTEL_EXPORTER_OTLP_*ENDPOINT's query (`?api-key=`), as vendors
    document it: `config check` masks it; what Sentry or a replay quotes must not show it."""
    settings = make_settings(
        otel={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.example/v1/traces?api-key=k3y-t0ken-9"
            "&region=eu&access_token=second-t0ken",
        }
    )
    redact = Redactor.of(settings)
    text = "POST https://c.example/v1/traces?api-key=k3y-t0ken-9 refused: k3y-t0ken-9"
    assert "k3y-t0ken-9" not in redact(text)
    assert "second-t0ken" not in redact("token second-t0ken")
    assert redact("region eu") == "region eu"  # not a credential


def test_the_passphrase_of_redis_urls_client_key_is_redacted(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(redis_url="rediss://127.0.0.1:1/0?ssl_password=k3y%2Fp4ss")
    assert {"k3y/p4ss", "k3y%2Fp4ss"} <= set(configured_secrets(settings))


def test_a_collectors_token_holding_a_hash_or_semicolon_is_redacted_whole(
    make_settings: Callable[..., Settings],
) -> None:
    """`config check` masks such a value to the next `&` (a `#` or `;` may be part of it):
    the redactor takes the same value, not what a URL parser would cut at the `#`."""
    endpoint = "https://c.example/v1/traces?api-key=k3y;p4rt#s3cond&region=eu"
    redact = Redactor.of(make_settings(otel={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}))
    assert redact("sent k3y;p4rt#s3cond") == f"sent {MARKER}"
