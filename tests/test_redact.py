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
