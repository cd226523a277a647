"""The Events page under test: a receiver, the real worker and the dashboard on one Redis,
and how to read the page's HTML."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html import unescape
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.conftest import AUTH, Harness
from workers import Event, PermanentError, handler
from workers.ops.dashboard import create_dashboard

ORIGIN = {"Origin": "http://localhost"}
ROW_ID = re.compile(r'<td class="id"><a\s+href="[^"]*"[^>]*>([^<]*)</a>')
SERIES_TOTAL = re.compile(r'<tr class="series-(\w+)"><th>\w+</th><td class="total">(\d+)')
CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)
TAG = re.compile(r"<[^>]+>")


def table(page: str, table_id: str) -> list[list[str]]:
    """The body rows of one table of the page, each cell's text (tags dropped, unescaped)."""
    found = re.search(rf'<table id="{table_id}"[^>]*>(.*?)</table>', page, re.S)
    assert found is not None, f"no table {table_id}"
    body = found.group(1).split("<tbody>", 1)[-1]
    return [
        [unescape(TAG.sub("", cell)).strip() for cell in CELL.findall(row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def ids_of(page: str) -> list[str]:
    return [unescape(found) for found in ROW_ID.findall(page)]


@dataclass
class Site:
    harness: Harness
    client: FlaskClient

    def get(self, path: str, **params: str) -> str:
        response = self.client.get(path, query_string=params or None, auth=AUTH)
        assert response.status_code == 200, response.status_code
        return response.get_data(as_text=True)

    def rows(self, **params: str) -> list[str]:
        """The event ids of the results table, in order."""
        return ids_of(self.get("/events", **params))


@pytest.fixture
def make_site(make_harness: Callable[..., Harness]) -> Callable[..., Site]:
    """A receiver, the real worker and the dashboard on one Redis. Handlers: order.* is
    done, fail.* raises (dead-lettered at once: unless the settings grant retries), bad.*
    is permanent."""

    def make(**settings: Any) -> Site:
        harness = make_harness(**{"webhook_max_retries": 0, **settings})

        @handler("inbound", "order.created")
        def ok(event: Event) -> None:
            pass

        @handler("inbound", "fail.sync")
        def fail(event: Event) -> None:
            raise RuntimeError(f"CRM said no to {event.id}")

        @handler("inbound", "bad.input")
        def bad(event: Event) -> None:
            raise PermanentError("cannot be processed")

        dashboard = create_dashboard(harness.settings)
        return Site(harness, dashboard.test_client())

    return make


@pytest.fixture
def site(make_site: Callable[..., Site]) -> Site:
    return make_site()
