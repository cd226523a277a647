"""Sentry's switch: off unless SENTRY_DSN is set, and then sentry-sdk is never imported; set,
the SDK runs none of its own integrations; set without the SDK, one line says what to
install. Its settings: checked without the SDK, the DSN shown by no command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import workers.runtime
from app.settings import ConfigError, Settings
from tests.conftest import SECRET
from tests.processes import ROOT
from tests.sentry_ingest import KEY, Ingest, serve
from workers.dev.redis_server import RedisServer
from workers.runtime.reports import worker_reports

# A delivery through the receiver, then a drain by the worker (as `webhooks worker --burst`
# runs it) in each mode, in a fresh interpreter: the handler fails, so the attempt's end
# goes where a report would start. It lists what is loaded from the job (the fork mode's
# child runs it there), and the process lists it after the request and after the drain.
_DRAIN = textwrap.dedent(
    """
    import json, os, sys
    from redis import Redis
    from starlette.testclient import TestClient
    from app.main import create_app
    from app.settings import Settings
    from tests.conftest import event_body, sign
    from workers import Event, handler
    from workers.runtime.run import run_worker

    def loaded():
        return sorted(m for m in sys.modules if m.startswith(("sentry_sdk",
            "workers.runtime.sentry_")))

    redis = Redis.from_url(os.environ["REDIS_URL"])

    @handler("inbound", "order.created")
    def look(event: Event) -> None:
        redis.set("loaded:" + event.id, json.dumps(loaded()))
        raise RuntimeError("failing on purpose")

    seen = {"start": loaded()}
    for mode in ("fork", "simple"):
        name = os.environ["WEBHOOK_QUEUE"] + "-" + mode  # one Redis for both tests
        settings = Settings.load(webhook_worker_mode=mode, webhook_key_prefix=name)
        with TestClient(create_app(settings)) as client:
            body = event_body("evt_" + name)
            answer = client.post(
                "/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)}
            )
            assert answer.json()["status"] == "accepted", answer.text
        seen["request " + mode] = loaded()
        run_worker(settings, burst=True)
        seen["job " + mode] = json.loads(redis.get("loaded:evt_" + name))
        seen["drain " + mode] = loaded()
    if "sentry_sdk" in sys.modules:
        import sentry_sdk
        seen["integrations"] = sorted(sentry_sdk.get_client().integrations)
    print(json.dumps(seen))
    """
)


@pytest.fixture
def ingest() -> Iterator[Ingest]:
    yield from serve()


def drain(redis_server: RedisServer, queue: str, **env: str) -> dict[str, list[str]]:
    ran = subprocess.run(
        [sys.executable, "-c", _DRAIN],
        cwd=ROOT,
        env={
            "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
            "REDIS_URL": redis_server.url,
            "WEBHOOK_SIGNING_SECRET": SECRET,
            "WEBHOOK_QUEUE": queue,
            "WEBHOOK_MAX_RETRIES": "0",
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )
    assert ran.returncode == 0, ran.stderr
    seen: dict[str, list[str]] = json.loads(ran.stdout.strip().splitlines()[-1])
    return seen


def test_with_no_dsn_nothing_of_sentry_is_imported(redis_server: RedisServer) -> None:
    seen = drain(redis_server, "sentry-off")
    assert [name for name, loaded in seen.items() if loaded] == []
    assert len(seen) == 7  # the start, then a request, a job and a drain per mode


def test_with_a_dsn_the_sdk_runs_no_integration_of_its_own(
    redis_server: RedisServer, ingest: Ingest
) -> None:
    # The same drain, SENTRY_DSN set: loaded at the worker's start (not by the receiver),
    # so in its jobs too.
    seen = drain(redis_server, "sentry-on", SENTRY_DSN=ingest.dsn())
    assert seen["start"] == seen["request fork"] == []
    for mode in ("fork", "simple"):
        assert "sentry_sdk" in seen[f"job {mode}"] and "sentry_sdk" in seen[f"drain {mode}"]
    # Neither RQ's (it would report a job's failure again), nor logging's, nor any other.
    assert seen["integrations"] == []
    # Each burst worker sent its failure before it ended.
    events = ingest.all()
    assert sorted(e["tags"]["webhook.worker_mode"] for e in events) == ["fork", "simple"]


def test_a_dsn_without_the_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentry_sdk", None)
    monkeypatch.delitem(sys.modules, "workers.runtime.sentry_reports", raising=False)
    monkeypatch.delattr(workers.runtime, "sentry_reports", raising=False)
    settings = Settings.load(
        _env_file=None,
        webhook_signing_secret=SECRET,
        sentry_dsn=f"https://{KEY}@o1.ingest.example/7",
    )
    with pytest.raises(ConfigError) as error:
        worker_reports(settings)
    message = str(error.value)
    assert message == (
        "SENTRY_DSN is set, but sentry-sdk is not installed: "
        "pip install 'rq-webhook-receiver[sentry]' (sentry_sdk is missing)"
    )


@pytest.mark.parametrize(
    "dsn",
    [
        f"https://{KEY}@o1.ingest.example/7",
        f"http://{KEY}:old-secret@127.0.0.1:9000/sentry/7",
        f" https://{KEY}@sentry.example/12 ",
    ],
)
def test_a_dsn_of_sentrys_form_is_kept_and_shown_by_nothing(dsn: str) -> None:
    settings = Settings.load(_env_file=None, webhook_signing_secret=SECRET, sentry_dsn=dsn)
    assert settings.sentry_dsn is not None
    assert settings.sentry_dsn.get_secret_value() == dsn.strip()
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump())


@pytest.mark.parametrize(
    "dsn",
    [
        "https://o1.ingest.example/7",  # no key
        f"https://{KEY}@o1.ingest.example/",  # no project
        f"https://{KEY}@o1.ingest.example/project",  # a project id is a number
        f"ftp://{KEY}@o1.ingest.example/7",
        f"{KEY}@o1.ingest.example/7",
    ],
)
def test_a_malformed_dsn_is_refused_without_quoting_it(dsn: str) -> None:
    with pytest.raises(ConfigError, match=r"^SENTRY_DSN: must read http\(s\)://") as error:
        Settings.load(_env_file=None, webhook_signing_secret=SECRET, sentry_dsn=dsn)
    assert KEY not in str(error.value)


def test_a_blank_dsn_is_off() -> None:
    settings = Settings.load(_env_file=None, webhook_signing_secret=SECRET, sentry_dsn="  ")
    assert settings.sentry_dsn is None and worker_reports(settings) is None
