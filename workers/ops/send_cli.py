"""`webhooks send SOURCE [TYPE]`: a signed, realistic test event, as the source's provider
sends it, posted to the receiver.

The request comes from the provider's signer (`workers/signing/`), signed with the
source's configured secret (the first of a rotation list) or `--secret`; the asymmetric
providers sign with the private key `make run` made for the source, so `--secret` for one
is a usage error. It goes to the `make run` stack of this checkout unless `--url` names
another receiver.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import httpx

from app.providers.json_body import strict_json
from app.settings import Settings, SourceConfig
from workers.dev.stackfile import find_stack
from workers.ops.common import CommandError, cell, load_settings
from workers.signing import (
    PRIVATE_KEY_PROVIDERS,
    EventToSign,
    Keys,
    SignedRequest,
    SigningError,
    sign,
)
from workers.signing.defaults import DEFAULT_TYPE

TIMEOUT = 10.0


@click.command()
@click.argument("source")
@click.argument("event_type", metavar="[TYPE]", required=False)
@click.option(
    "--data",
    metavar="JSON|@FILE",
    help="The event object (Stripe's data.object, the whole body for hmac...), as JSON.",
)
@click.option(
    "--id",
    "event_id",
    metavar="ID",
    help="The event id (default: the one --data holds where the provider reads it, such as "
    "hmac's id; else a new one).",
)
@click.option("--url", metavar="URL", help="The receiver (default: this checkout's make run).")
@click.option(
    "--secret",
    metavar="S",
    help="Sign with this secret, not the configured one (not for discord, sendgrid, sns, "
    "plaid: they sign with a private key).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object.")
def send(
    source: str,
    event_type: str | None,
    data: str | None,
    event_id: str | None,
    url: str | None,
    secret: str | None,
    as_json: bool,
) -> None:
    """Sign a test event as SOURCE's provider does and post it to the receiver.

    Exits 1 when the receiver refused it (or could not be reached)."""
    settings = load_settings()
    config = _source(settings, source)
    if secret is not None and config.provider in PRIVATE_KEY_PROVIDERS:
        raise click.UsageError(
            f"--secret cannot apply to source {config.name!r}: {config.provider} signs with "
            "a private key (the one `make run` made for it), not a secret"
        )
    given = _data(data)
    event = EventToSign(
        event_id=event_id or f"evt_test_{secrets.token_hex(6)}",
        event_type=event_type or DEFAULT_TYPE[config.provider],
        url=_endpoint(url, config.name),
        data=given,
        id_given=bool(event_id),
        type_given=bool(event_type),
    )
    keys = Keys(secret or _first_secret(config), _private_key(config))
    try:
        request = sign(config, event, keys)
    except SigningError as exc:
        raise CommandError(str(exc)) from None
    answer = _post(request)
    _report(request, answer, as_json)
    if not answer.is_success:
        raise SystemExit(1)


def _source(settings: Settings, name: str) -> SourceConfig:
    found = settings.sources.get(name)
    if found is None:
        known = ", ".join(settings.sources) or "none"
        raise CommandError(f"unknown source {name!r}; configured sources: {known}")
    return found


def _first_secret(source: SourceConfig) -> str:
    return source.secrets[0].get_secret_value() if source.secrets else ""


def _private_key(source: SourceConfig) -> bytes:
    """The private key `make run` made for an asymmetric provider's source, if any."""
    if source.provider not in PRIVATE_KEY_PROVIDERS:
        return b""
    from workers.dev.devkeys import private_key_for

    stack = find_stack()
    return private_key_for(source.name, stack.root if stack else Path()) or b""


def _endpoint(url: str | None, source: str) -> str:
    """`--url` as given when it names a path, else its base plus the source's path; the
    stack's receiver without it."""
    path = f"/webhooks/{source}"
    if url:
        try:
            parts = urlsplit(url)
            httpx.URL(url)  # what the post will parse: a bad port or character is said here
        except (ValueError, httpx.InvalidURL):
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise CommandError(f"--url must be http(s)://HOST[:PORT][/PATH], not {url!r}")
        return url if parts.path.strip("/") else url.rstrip("/") + path
    found = find_stack()
    if found is None or found.stack is None or not found.stack.receiver:
        raise CommandError(
            "no `make run` stack of this checkout is up: start one with `make run`, or "
            "give the receiver with --url http://HOST:PORT"
        )
    return found.stack.receiver.rstrip("/") + path


def _data(given: str | None) -> Any:
    if given is None:
        return None
    text = given
    if given.startswith("@"):
        try:
            text = Path(given[1:]).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--data {given}: cannot read it ({type(exc).__name__})") from None
    try:
        # Strictly, as the receiver parses: NaN, 1e999 and a lone surrogate ("\\ud800",
        # which no UTF-8 body can carry) are refused here, not sent or a traceback.
        value = strict_json(text)
        json.dumps(value, ensure_ascii=False).encode()
    except (ValueError, RecursionError) as exc:
        raise CommandError(f"--data is not JSON: {exc}") from None
    return value


def _post(request: SignedRequest) -> httpx.Response:
    try:
        return httpx.request(
            request.method,
            request.url,
            content=request.body,
            headers=request.headers,
            timeout=TIMEOUT,
        )
    except httpx.HTTPError as exc:
        raise CommandError(
            f"cannot reach the receiver at {request.url} ({type(exc).__name__}); "
            "is `make run` still running, or is --url right?"
        ) from None


def _report(request: SignedRequest, answer: httpx.Response, as_json: bool) -> None:
    status, detail = _status(answer)
    if as_json:
        click.echo(
            json.dumps(
                {"status": status, "id": request.event_id, "http_status": answer.status_code}
            )
        )
        return
    line = f"{status} {request.event_id} → {request.url} ({answer.status_code})"
    click.echo(cell(line + (f": {detail}" if detail else "")), err=not answer.is_success)


def _status(answer: httpx.Response) -> tuple[str, str]:
    """accepted or duplicate, answered (a handshake's answer), or refused with the
    receiver's reason."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if not answer.is_success:
        detail = body.get("detail") if isinstance(body, dict) else answer.text[:200]
        return "refused", str(detail)
    if isinstance(body, dict) and body.get("status") in ("accepted", "duplicate"):
        return str(body["status"]), ""
    # A provider's own acknowledgement (Adyen's `[accepted]`, TwiML) carries ours aside.
    ours = answer.headers.get("x-webhook-status", "")
    return (ours, "") if ours in ("accepted", "duplicate") else ("answered", "")
