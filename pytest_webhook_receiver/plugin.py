"""rq-webhook-receiver's pytest plugin (entry point `pytest11`: `webhook_receiver`): the fixtures
`webhook_event`, `deliver`, `signed_request` and `receiver` for testing handlers.

Pytest loads this for every run in an environment where rq-webhook-receiver is installed,
before the project's conftest files, so it imports nothing of `app` or `workers` here: in
a project with a top-level `app` package of its own, our `app` would otherwise be the one
that project's tests import. Two checks say, in one line (exit status 4, a usage error),
when our `app` and `workers` cannot be the ones a run imports:
- before any conftest or test module is imported, where the run will import them from
  (`predict.py`), when the project uses rq-webhook-receiver: its own `app` (the usual
  FastAPI layout) would otherwise end in a bare ModuleNotFoundError at the first import;
- at the end of collection, when a test uses a fixture: what this process imports now
  (`clash.clash()`), and whether the `[testing]` extra is there.
The fixtures' code (`workers/testing/`) is imported when a test uses one.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_webhook_receiver.clash import clash
from pytest_webhook_receiver.predict import Run, predicted_clash

if TYPE_CHECKING:
    from workers.testing.client import ReceiverClient
    from workers.testing.plugin import Deliver, EventFactory, RequestSigner
    from workers.testing.settings import FixtureSettings, Secrets

FIXTURES = ("webhook_event", "deliver", "signed_request", "receiver")
NEED_FAKEREDIS = ("deliver", "receiver")
SETTINGS_MARKER = "webhooks_settings"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rq-webhook-receiver")
    group.addoption(
        "--webhooks-redis",
        metavar="URL",
        default=None,
        help="run the `receiver` fixture on this Redis database, FLUSHED before each test "
        "that uses it (default: fakeredis). REDIS_URL is never used for this.",
    )
    parser.addini("webhooks_redis", "as --webhooks-redis", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SETTINGS_MARKER}(**settings): rq-webhook-receiver settings for this test, over the "
        "environment and .env: WEBHOOK_SOURCES='shop:shopify' or webhook_max_retries=0",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Stop the run here, in one line, before the project's conftest and test modules are
    imported, if the `app` or `workers` they would import are the project's own."""
    if getattr(early_config.known_args_namespace, "help", False):
        return
    problem = predicted_clash(_upcoming(early_config))
    if problem is not None:
        raise pytest.UsageError(problem)


def _upcoming(config: pytest.Config) -> Run:
    """The run as pytest will make it (its `_decide_args`, and the options it reads)."""
    options = config.known_args_namespace
    here = config.invocation_params.dir
    given = [str(arg).split("::")[0] for arg in getattr(options, "file_or_dir", None) or ()]
    if getattr(options, "pyargs", False):  # module names: only those that are paths too
        given = [arg for arg in given if (here / arg).exists()]
    paths = [Path(os.path.abspath(here / arg)) for arg in given]
    if not paths and here == config.rootpath:
        for pattern in config.getini("testpaths"):
            found = glob.glob(str(config.rootpath / pattern), recursive=True)
            paths.extend(Path(os.path.abspath(p)) for p in sorted(found))
    confcutdir = getattr(options, "confcutdir", None)
    return Run(
        invocation_dir=here,
        rootpath=config.rootpath,
        args=paths or [here],
        import_mode=str(getattr(options, "importmode", "prepend")),
        python_files=list(config.getini("python_files")),
        norecursedirs=list(config.getini("norecursedirs")),
        confcutdir=Path(os.path.abspath(confcutdir)) if confcutdir else None,
        into_virtualenvs=bool(getattr(options, "collect_in_virtualenv", False)),
        pythonpath=[Path(p) for p in config.getini("pythonpath")],
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop the run here, in one line, if a test uses our fixtures and they cannot work."""
    used = set().union(*(_ours(item) for item in items))
    if not used:
        return
    problem = clash()
    if problem is None and used & set(NEED_FAKEREDIS):
        problem = _extra_missing(used, bool(_redis_url(config)))
    if problem is not None:
        raise pytest.UsageError(problem)


def _ours(item: pytest.Item) -> set[str]:
    """Our fixtures this test uses: a project's own fixture of the same name is not ours.
    `_fixtureinfo` is pytest's (pinned by tests/testing/test_plugin_clash.py); without
    it, the name alone decides."""
    names = set(getattr(item, "fixturenames", ())) & set(FIXTURES)
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", None)
    if not names or definitions is None:
        return names
    return {
        name
        for name in names
        if definitions.get(name)
        and getattr(getattr(definitions[name][-1], "func", None), "__module__", "") == __name__
    }


def _extra_missing(used: set[str], real_redis: bool) -> str | None:
    needs = sorted(n for n in used & set(NEED_FAKEREDIS) if not (n == "receiver" and real_redis))
    if not needs:
        return None
    import importlib.util

    if all(importlib.util.find_spec(name) is not None for name in ("fakeredis", "lupa")):
        return None
    return (
        f"rq-webhook-receiver's fixture(s) {', '.join(needs)} need fakeredis with Lua, which "
        "is not installed: pip install 'rq-webhook-receiver[testing]'"
    )


def _redis_url(config: pytest.Config) -> str:
    given = config.getoption("webhooks_redis") or config.getini("webhooks_redis")
    return str(given or "").strip()


def _overrides(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The `webhooks_settings` markers' keywords, the closest (the test's) last to win."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(request.node.iter_markers(SETTINGS_MARKER))):
        if mark.args:
            raise pytest.UsageError(
                f"@pytest.mark.{SETTINGS_MARKER} takes keywords only: "
                "WEBHOOK_SOURCES='shop:shopify', webhook_max_retries=0"
            )
        merged.update(mark.kwargs)
    return merged


# --- fixtures: private ones (`_webhooks_*`), then the four of the contract --------------


@pytest.fixture(scope="session")
def _webhooks_made() -> Secrets:
    from workers.testing.settings import Secrets

    return Secrets()


@pytest.fixture
def _webhooks_setup(
    request: pytest.FixtureRequest, _webhooks_made: Secrets
) -> Iterator[FixtureSettings]:
    from app.settings import ConfigError
    from workers.testing import plugin

    with ExitStack() as stack:
        problem = None
        try:
            setup = plugin.fixture_settings(_overrides(request), _webhooks_made, stack)
        except ConfigError as exc:
            problem = f"rq-webhook-receiver settings: {exc}"
        if problem is not None:  # failed outside the except: one line, no chained traceback
            pytest.fail(problem, pytrace=False)
        plugin.keep_registry(stack)
        yield setup


@pytest.fixture
def webhook_event(_webhooks_setup: FixtureSettings) -> EventFactory:
    """`webhook_event(source, type=None, payload=None, *, id=None, headers=None, attempt=1,
    received_at=None)`: the `Event` a handler receives, from a request signed by the
    provider's signer and checked by the source's verifier."""
    from workers.testing import plugin

    return plugin.event_factory(_webhooks_setup)


@pytest.fixture
def deliver(_webhooks_setup: FixtureSettings) -> Deliver:
    """`deliver(event)`: run the registered handlers as the worker does; the `Outcome`
    names each by its function name (done, failed with its error, stale, not_run)."""
    from workers.testing import plugin

    return plugin.deliverer(_webhooks_setup)


@pytest.fixture
def signed_request(_webhooks_setup: FixtureSettings) -> RequestSigner:
    """`signed_request(source, payload=None, *, type=None, id=None, secret=None,
    private_key=None, url=None, timestamp=None)`: `(headers, body)` as the provider sends."""
    from workers.testing import plugin

    return plugin.signer(_webhooks_setup)


@pytest.fixture
def receiver(
    request: pytest.FixtureRequest, _webhooks_setup: FixtureSettings
) -> Iterator[ReceiverClient]:
    """A client of the real receiver app on fakeredis (or `--webhooks-redis`): `post` a
    `signed_request`, see `jobs()`, run them with the real worker with `run_jobs()`."""
    from workers.testing import plugin

    with ExitStack() as stack:
        yield plugin.open_receiver(_webhooks_setup, _redis_url(request.config) or None, stack)
