"""The dev key server serves an SNS source's certificate: the certificate alone, however
the kept PEM file orders its parts (`cat cert.pem key.pem` puts the certificate first)."""

from __future__ import annotations

from pathlib import Path

import httpx

from workers.dev.devkeys import dev_keys, key_path
from workers.dev.keypair import make_pem
from workers.dev.keyserver import start_key_server

CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


def test_a_kept_pem_with_its_certificate_first_never_serves_the_private_key(
    tmp_path: Path,
) -> None:
    made = make_pem("sns")
    key_part, cert_part = made.split(CERTIFICATE, 1)
    path = key_path("alerts", tmp_path)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(CERTIFICATE + cert_part + key_part)
    [key] = dev_keys(tmp_path, "alerts:sns")
    url, stop = start_key_server([key], None)
    try:
        served = httpx.get(url + key.certificate_path, timeout=5)
    finally:
        stop()
    assert served.status_code == 200
    assert served.content.startswith(CERTIFICATE)
    assert b"PRIVATE KEY" not in served.content
