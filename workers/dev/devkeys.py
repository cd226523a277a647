"""Development key pairs for the asymmetric sources, so `webhooks send` works against the
`make run` stack.

Discord, SendGrid, AWS SNS and Plaid sign with private keys only they hold. For each such
source of WEBHOOK_SOURCES whose key the user has not configured, `make run` makes a key
pair once and keeps it in `var/dev-keys/<source>.pem` (directory 700, file 600, reused on
every later run, never printed), and configures the source with its public half:

  provider  key                                   the stack's processes get
  --------  ------------------------------------  ----------------------------------------
  discord   Ed25519                               WEBHOOK_SECRET_<NAME> = the public key
                                                  (64 hex characters, the Portal's form)
  sendgrid  P-256                                 WEBHOOK_SECRET_<NAME> = base64 of the
                                                  DER public key (SendGrid's form)
  sns       RSA-2048 and a self-signed            WEBHOOK_TOPICS_<NAME> (if unset) a dev
            certificate (in the same file)        topic; WEBHOOK_FETCH_ALLOW + the key
                                                  server, where the certificate is served
  plaid     P-256 (its JWK and `kid` derive       WEBHOOK_CLIENT_ID_<NAME> (if unset),
            from it)                              WEBHOOK_SECRET_<NAME> (an API secret the
                                                  key server accepts, derived from the
                                                  key), WEBHOOK_API_BASE_<NAME> = the key
                                                  server; WEBHOOK_FETCH_ALLOW + it

"Configured" is what `stackfile.configured` says (the environment or `.env`): Discord and
SendGrid sources with WEBHOOK_SECRET_<NAME> set, and Plaid sources with
WEBHOOK_SECRET_<NAME> or WEBHOOK_API_BASE_<NAME> set, verify the provider's real keys and
get no dev key. SNS sources always get one: SNS has no key of the source's own (its
certificates are fetched from AWS), and the key server's origin is only added to the
allowed ones.

This works from WEBHOOK_SOURCES and the variables as configured, not from loaded
`Settings`: a Discord source without WEBHOOK_SECRET_<NAME> would not load until the value
made here is given to it. A key pair itself (made, checked, what derives from it) is
`keypair.py`'s: this module decides which sources get one, where it is kept, and what the
stack's processes are told of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from app.settings import DEFAULT_FETCH_ALLOW
from app.sources import DEFAULT_PROVIDER, env_suffix
from workers.dev.keypair import DevKey, derived_client_id, fits, make_pem, signing_pem
from workers.dev.private import private_dir, write_private
from workers.dev.stackfile import VAR, configured, configured_value
from workers.signing import PRIVATE_KEY_PROVIDERS

DEV_KEYS = VAR / "dev-keys"
# Written by the key server while it runs (not a secret): SNS's SigningCertURL names it.
KEY_SERVER_FILE = DEV_KEYS / "key-server.url"
SERVED = frozenset({"sns", "plaid"})  # their verifiers fetch the key from the key server
# The topic an SNS source accepts when WEBHOOK_TOPICS_<NAME> is unset (a dev account).
DEV_TOPIC = "arn:aws:sns:us-east-1:000000000000:{source}"
_SOURCE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def asymmetric_sources(root: Path = Path(), sources: str | None = None) -> dict[str, str]:
    """Source name -> provider, for the sources of WEBHOOK_SOURCES (`sources`, else as
    configured) whose provider signs with a private key. Entries that would not load are
    left to `Settings.load` to report."""
    entries = sources if sources is not None else configured_value("WEBHOOK_SOURCES", root)
    found: dict[str, str] = {}
    for entry in (entries or "inbound:hmac").split(","):
        name, _, provider = entry.partition(":")
        name = name.strip()
        provider = provider.strip() or DEFAULT_PROVIDER.get(name, name)
        if provider in PRIVATE_KEY_PROVIDERS and _SOURCE_NAME.fullmatch(name):
            found.setdefault(name, provider)
    return found


def wants_dev_key(name: str, provider: str, root: Path = Path()) -> bool:
    """True when the source has no key of the user's: else it verifies what `send` cannot sign."""
    suffix = env_suffix(name)
    if provider == "sns":
        return True
    if provider == "plaid" and configured("WEBHOOK_API_BASE_" + suffix, root):
        return False
    return not configured("WEBHOOK_SECRET_" + suffix, root)


def key_path(source: str, root: Path = Path()) -> Path:
    if not _SOURCE_NAME.fullmatch(source):
        raise ValueError(f"not a source name: {source!r}")
    return root / DEV_KEYS / f"{source}.pem"


def _keys_dir(root: Path) -> Path:
    private_dir(root / VAR)  # an older run's may be 755
    return private_dir(root / DEV_KEYS)


def dev_keys(
    root: Path = Path(), sources: str | None = None, *, create: bool = True
) -> list[DevKey]:
    """The key pairs of the sources that need one (see the module's docstring), made on the
    first run and read back on the next ones. `create=False` only reads those already made
    (what `webhooks send` wants: a key the stack does not know would sign for nothing)."""
    made = []
    for name, provider in asymmetric_sources(root, sources).items():
        if not wants_dev_key(name, provider, root):
            continue
        path = key_path(name, root)
        pem = path.read_bytes() if path.is_file() else b""
        if not fits(pem, provider):
            if not create:
                continue
            _keys_dir(root)
            pem = make_pem(provider)
            write_private(path, pem)
        elif create:
            _keys_dir(root)
            path.chmod(0o600)
        key = DevKey(name, provider, pem)
        if provider == "plaid":
            own = configured_value("WEBHOOK_CLIENT_ID_" + env_suffix(name), root).strip()
            key = DevKey(name, provider, pem, own or derived_client_id(key))
        made.append(key)
    return made


def needs_key_server(keys: Sequence[DevKey]) -> bool:
    """True when a verifier of these sources fetches its key (SNS, Plaid)."""
    return any(key.provider in SERVED for key in keys)


def dev_key_env(
    keys: Sequence[DevKey], key_server_url: str | None, root: Path = Path()
) -> dict[str, str]:
    """The variables the stack's processes need for these keys (see the module's
    docstring), never one the user configured, except WEBHOOK_FETCH_ALLOW, which is the
    user's list (or the defaults) with the key server's origin added."""
    env: dict[str, str] = {}
    served = needs_key_server(keys)
    if served and not key_server_url:
        raise ValueError("SNS and Plaid sources need the key server's URL")
    for key in keys:
        env.update(key_env(key, key_server_url))
    if served:
        assert key_server_url is not None
        allowed = configured_value("WEBHOOK_FETCH_ALLOW", root)
        origins = [o.strip() for o in allowed.split(",") if o.strip()] or list(DEFAULT_FETCH_ALLOW)
        env["WEBHOOK_FETCH_ALLOW"] = ",".join(dict.fromkeys([*origins, key_server_url]))
    # What the user set is theirs (the client id is only repeated to the key server).
    return {k: v for k, v in env.items() if k == "WEBHOOK_FETCH_ALLOW" or not configured(k, root)}


def key_env(key: DevKey, key_server_url: str | None, topics: str = "") -> dict[str, str]:
    """The source's variables for its key (the module's table): `topics` an SNS source's
    own, if it has any; `key_server_url` where SNS and Plaid keys are served."""
    suffix = env_suffix(key.source)
    if key.provider in ("discord", "sendgrid"):
        return {"WEBHOOK_SECRET_" + suffix: key.public_value}
    if key.provider == "sns":
        return {"WEBHOOK_TOPICS_" + suffix: topics or DEV_TOPIC.format(source=key.source)}
    assert key_server_url is not None  # a Plaid key is always served
    return {
        "WEBHOOK_CLIENT_ID_" + suffix: key.plaid_client_id,
        "WEBHOOK_SECRET_" + suffix: key.plaid_secret,
        "WEBHOOK_API_BASE_" + suffix: key_server_url,
    }


def record_key_server(url: str | None, root: Path = Path()) -> None:
    """Say where the key server runs (None: that it stopped), for `private_key_for`."""
    path = root / KEY_SERVER_FILE
    if url is None:
        path.unlink(missing_ok=True)
    else:
        _keys_dir(root)
        write_private(path, url.encode() + b"\n")


def key_server_url(root: Path = Path()) -> str | None:
    """The URL of the running stack's key server, as it wrote it, if it runs."""
    path = root / KEY_SERVER_FILE
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def private_key_for(source_name: str, root: Path = Path()) -> bytes | None:
    """The PEM `webhooks send` signs `source_name`'s requests with (`Keys.private_key`):
    its development key, when `make run` made one and the source still uses it; None
    otherwise. For SNS, a `SigningCertURL:` line names the certificate on the running key
    server (without it, the signer says the key server is not running)."""
    if not _SOURCE_NAME.fullmatch(source_name):
        return None
    keys = {key.source: key for key in dev_keys(root, create=False)}
    key = keys.get(source_name)
    if key is None:
        return None
    return signing_pem(key, key_server_url(root))


def served_by(keys: Sequence[DevKey]) -> Mapping[str, DevKey]:
    """SNS certificate path -> key, for the key server."""
    return {key.certificate_path: key for key in keys if key.provider == "sns"}
