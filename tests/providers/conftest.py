"""The local key server (`fake_keys`) is stopped, and its socket closed, when the session
ends, whichever test started it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers import fake_keys


@pytest.fixture(scope="session", autouse=True)
def _fake_key_server() -> Iterator[None]:
    yield
    fake_keys.stop()
