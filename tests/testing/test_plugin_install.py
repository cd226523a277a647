"""How the plugin is installed: registered by `pip install rq-webhook-receiver` itself, its
dependencies in the `[testing]` extra, and nothing of `app` or `workers` imported until a
test uses a fixture."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import distribution

import pytest
from packaging.requirements import Requirement

from tests.testing.project import run, user_project


def requirements(extra: str | None) -> set[str]:
    """The names of the distribution's requirements for `extra` (None: the base install)."""
    found = set()
    for line in distribution("rq-webhook-receiver").requires or []:
        requirement = Requirement(line)
        marker = requirement.marker
        wanted = (
            marker is None
            if extra is None
            else (marker is not None and marker.evaluate({"extra": extra}))
        )
        if wanted:
            found.add(requirement.name + "".join(f"[{e}]" for e in sorted(requirement.extras)))
    return found


def test_the_base_install_registers_the_plugin_under_pytest11() -> None:
    points = distribution("rq-webhook-receiver").entry_points.select(group="pytest11")
    assert [(p.name, p.value) for p in points] == [
        ("webhook_receiver", "pytest_webhook_receiver.plugin")
    ]


def test_the_base_install_carries_neither_pytest_nor_fakeredis() -> None:
    names = {name.partition("[")[0] for name in requirements(None)}
    assert not names & {"pytest", "fakeredis"}


def test_the_testing_extra_holds_pytest_and_fakeredis_with_lua_and_the_test_extra_pulls_it() -> (
    None
):
    assert {"pytest", "fakeredis[lua]"} <= requirements("testing")
    assert "rq-webhook-receiver[testing]" in requirements("test")


def test_loading_the_plugin_imports_nothing_of_app_or_workers() -> None:
    probe = (
        "import sys, pytest_webhook_receiver.plugin; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('app', 'workers')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


WITHOUT_THE_EXTRA = """
import sys

sys.modules["lupa"] = None  # as where `pip install rq-webhook-receiver` came without [testing]
"""


def test_without_the_testing_extra_a_test_using_deliver_stops_collection_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    user_project(pytester, "WEBHOOK_SOURCES=stripe\n", conftest=WITHOUT_THE_EXTRA)
    pytester.makepyfile(
        test_user="""
        def test_deliver(webhook_event, deliver):
            deliver(webhook_event("stripe"))
        """
    )
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.startswith("ERROR")] == [
        "ERROR: rq-webhook-receiver's fixture(s) deliver need fakeredis with Lua, which is not "
        "installed: pip install 'rq-webhook-receiver[testing]'"
    ]


def test_without_the_testing_extra_webhook_event_and_signed_request_still_work(
    pytester: pytest.Pytester,
) -> None:
    user_project(pytester, "WEBHOOK_SOURCES=stripe\n", conftest=WITHOUT_THE_EXTRA)
    pytester.makepyfile(
        test_user="""
        def test_event(webhook_event, signed_request):
            assert webhook_event("stripe").source == "stripe"
            assert signed_request("stripe").body
        """
    )
    run(pytester).assert_outcomes(passed=1)
