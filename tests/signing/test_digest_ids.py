"""An id given for a provider whose event id is the body's digest: it seeds the sample's
own ids, or stands in the data as the data's own id; data that is the whole body and holds
it nowhere would leave it out of the event entirely, which is said, not done silently."""

from __future__ import annotations

import pytest

from workers.signing import SigningError
from workers.testing.events import sign
from workers.testing.settings import FixtureSettings, Secrets, load_test_settings

# The providers whose receiver id is the body's digest and whose data is the whole body.
WHOLE_BODY = ("braintree", "calendly", "dropbox", "lemonsqueezy", "meta", "zoom")
DATA = {"total": 5, "note": "x"}


@pytest.fixture(scope="module")
def setup() -> FixtureSettings:
    sources = ",".join(f"{provider}:{provider}" for provider in WHOLE_BODY)
    return load_test_settings({"webhook_sources": sources}, Secrets(), lambda keys: None)


@pytest.mark.parametrize("provider", WHOLE_BODY)
def test_an_id_the_whole_body_data_leaves_out_is_refused_naming_it(
    setup: FixtureSettings, provider: str
) -> None:
    with pytest.raises(SigningError) as refused:
        sign(setup, provider, DATA, id="evt_given_1")
    assert str(refused.value).startswith(f"{provider}: the event id is the body's digest")
    assert "'evt_given_1'" in str(refused.value)


@pytest.mark.parametrize("provider", WHOLE_BODY)
def test_the_same_data_without_an_id_is_sent_under_its_digest(
    setup: FixtureSettings, provider: str
) -> None:
    assert sign(setup, provider, DATA).event_id.startswith("sha256:")


@pytest.mark.parametrize("provider", WHOLE_BODY)
def test_an_id_without_data_seeds_the_sample_so_another_id_is_another_event(
    setup: FixtureSettings, provider: str
) -> None:
    one, other = (sign(setup, provider, id=event_id) for event_id in ("evt_a", "evt_b"))
    assert one.event_id.startswith("sha256:") and one.event_id != other.event_id


def test_an_id_the_data_holds_as_its_own_is_sent() -> None:
    """HubSpot's body holds `eventId`: the id given goes there (its receiver id, a digest
    of the batch, still depends on it)."""
    hubspot = load_test_settings({"webhook_sources": "crm:hubspot"}, Secrets(), lambda k: None)
    request = sign(hubspot, "crm", DATA, id="41")
    assert b'"eventId":41' in request.body.replace(b" ", b"")
