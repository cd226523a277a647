"""The attacker-page server the browser tests share: it serves what the test wrote, and
nothing listens on its port once the test is over."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx

from tests.faults.browser import other_origin


def test_the_other_origin_serves_the_page_then_stops_and_closes_its_socket() -> None:
    serving = other_origin()
    site = next(serving)
    assert urlsplit(site.url).hostname == "localhost"  # not the dashboard's 127.0.0.1
    site.html = "<p>written after the server started</p>"
    response = httpx.get(site.url, trust_env=False)
    assert response.text == site.html and response.headers["content-type"] == "text/html"
    serving.close()
    port = urlsplit(site.url).port
    assert port is not None
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
