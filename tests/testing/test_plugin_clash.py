"""A project with its own top-level `app` or `workers` package: the plugin leaves it alone,
works where the two can live in one process, and otherwise stops collection with one line
that names the clash and what to do. Each runs pytest in a process of its own: in this one
our `app` and `workers` are imported already, so no project could take their names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.testing.project import ASIDE, BILLING

USES_A_FIXTURE = """
def test_event(webhook_event):
    assert webhook_event("stripe").source == "stripe"
"""
ENV = "WEBHOOK_SOURCES=stripe\n"


def fastapi_layout(pytester: pytest.Pytester, init: bool = True) -> None:
    """The usual FastAPI project: its own `app` package, tests beside it."""
    (pytester.path / ".env").write_text(ENV)
    package = pytester.mkpydir("app") if init else pytester.mkdir("app")
    (package / "main.py").write_text('NAME = "the project\'s app"\n')


def pytest_process(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """`python -m pytest` in the project (pytester's: the project's directory is on sys.path)."""
    return pytester.runpytest_subprocess(*ASIDE, *args)


def one_error_line(result: pytest.RunResult) -> str:
    errors = [line for line in result.errlines if line.startswith("ERROR: ")]
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines + result.errlines
    assert len(errors) == 1, result.errlines
    return errors[0]


def test_a_projects_own_app_stops_collection_in_one_line_once_a_fixture_is_used(
    pytester: pytest.Pytester,
) -> None:
    fastapi_layout(pytester)
    pytester.makepyfile(test_user="from app.main import NAME\n" + USES_A_FIXTURE)
    line = one_error_line(pytest_process(pytester))
    assert line == (
        "ERROR: rq-webhook-receiver's fixtures need its own top-level package 'app', but 'app' "
        f"here is {pytester.path / 'app'}, and one Python process imports only one 'app'; "
        "rename your package (e.g. to 'myproject'), or keep it off sys.path in this run "
        "(plain `pytest --import-mode=importlib`, not `python -m pytest`, and no rootdir "
        "conftest.py or pythonpath= that adds its directory)"
    )


def test_a_projects_own_app_is_left_alone_when_no_fixture_is_used(
    pytester: pytest.Pytester,
) -> None:
    fastapi_layout(pytester)
    pytester.makepyfile(
        test_user="""
        from app.main import NAME

        def test_its_app():
            assert NAME == "the project's app"
        """
    )
    pytest_process(pytester).assert_outcomes(passed=1)


def test_a_projects_fixture_named_like_ours_is_its_own_and_no_clash(
    pytester: pytest.Pytester,
) -> None:
    fastapi_layout(pytester)
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def receiver():
            return "the project's receiver"
        """
    )
    pytester.makepyfile(
        test_user="""
        def test_its_receiver(receiver):
            assert receiver == "the project's receiver"
        """
    )
    pytest_process(pytester).assert_outcomes(passed=1)


def test_a_projects_app_without_init_merges_with_ours_when_no_module_name_is_shared(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / ".env").write_text("WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=app.billing\n")
    (pytester.mkdir("app") / "billing.py").write_text(BILLING)
    pytester.makepyfile(
        test_user="""
        def test_its_handlers(webhook_event, deliver):
            outcome = deliver(webhook_event("stripe", "invoice.paid", {"amount_paid": 1}))
            assert outcome.states == {"record_payment": "done", "notify": "done", "audit": "done"}
        """
    )
    pytest_process(pytester).assert_outcomes(passed=1)


def test_a_projects_app_without_init_sharing_a_module_name_stops_collection(
    pytester: pytest.Pytester,
) -> None:
    fastapi_layout(pytester, init=False)
    pytester.makepyfile(test_user=USES_A_FIXTURE)
    line = one_error_line(pytest_process(pytester))
    assert (
        f"but your 'app' at {pytester.path / 'app'} has no __init__.py, so it merges with "
        "rq-webhook-receiver's, and both hold 'main'; rename your package" in line
    )


def test_a_projects_own_workers_package_stops_collection_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / ".env").write_text(ENV)
    pytester.mkpydir("workers")
    pytester.makepyfile(test_user=USES_A_FIXTURE)
    line = one_error_line(pytest_process(pytester))
    assert line.startswith(
        "ERROR: rq-webhook-receiver's fixtures need its own top-level package 'workers', but "
        f"'workers' here is {pytester.path / 'workers'}, and one Python process imports "
        "only one 'workers'; rename your package"
    )


def test_plain_pytest_in_importlib_mode_keeps_a_projects_unimported_app_off_the_path(
    pytester: pytest.Pytester,
) -> None:
    # What the one line advises, for tests that do not import the project's own app.
    fastapi_layout(pytester)
    pytester.mkpydir("tests")
    (pytester.path / "tests" / "test_user.py").write_text(USES_A_FIXTURE)
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "pytest"), *ASIDE, "--import-mode=importlib", "-q"],
        cwd=pytester.path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
