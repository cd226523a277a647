"""A project with its own top-level `app` or `workers` package. Where it uses
rq-webhook-receiver, the run stops before it imports any of the project's modules, in one
line that names the clash and the fix (renaming the package: no import mode makes two `app`s
importable in one process), and following that line makes it pass. Where it does not, the
plugin leaves it alone; where the two can live in one process, it works. Each runs pytest in
a process of its own, from the project's directory: in this one our `app` and `workers` are
imported already, so no project could take their names."""

from __future__ import annotations

from pathlib import Path

import pytest

import workers
from pytest_webhook_receiver.clash import Theirs
from pytest_webhook_receiver.predict import API
from tests.conftest import ROOT
from tests.testing.project import (
    ASIDE,
    BILLING,
    COMMANDS,
    ON_SYS_PATH,
    PYTHONPATH_HERE,
    fastapi_project,
    follow,
    imported,
    run_in,
    the_one_line,
)

USES_A_FIXTURE = """
def test_event(webhook_event):
    assert webhook_event("stripe").source == "stripe"
"""
ENV = "WEBHOOK_SOURCES=stripe\n"
FIX = (
    "rename yours, e.g. app -> myshop, and its imports (from myshop.handlers import ..., "
    "WEBHOOK_HANDLERS=myshop.handlers)"
)
NO_OPTION = ": no import mode or pytest option makes both importable in one process"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


def fastapi_layout(pytester: pytest.Pytester, init: bool = True) -> None:
    """The usual FastAPI project's `app` package, without handlers, tests beside it."""
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


@pytest.mark.parametrize("on_sys_path", ON_SYS_PATH)
def test_the_fastapi_layout_stops_before_any_module_is_imported_and_renaming_makes_it_pass(
    root: Path, on_sys_path: str
) -> None:
    marker = fastapi_project(root, on_sys_path)
    lines = {}
    for command in COMMANDS:
        lines[command] = the_one_line(run_in(root, command))
        assert imported(marker) == []  # neither a conftest nor a test module, nor app's
    off_path = on_sys_path == "nothing"  # plain `pytest` does not put the project there
    assert lines == {
        "pytest": f"ERROR: your package 'app' at {root / 'app'} clashes with "
        "rq-webhook-receiver's own top-level package 'app' (one Python process imports one "
        f"'app'): {FIX}"
        + (f", with {root} on sys.path (pytest's `pythonpath` setting)" if off_path else "")
        + NO_OPTION,
        "python -m pytest": f"ERROR: your package 'app' at {root / 'app'} clashes with "
        "rq-webhook-receiver's own top-level package 'app' (one Python process imports one "
        f"'app'): {FIX}{NO_OPTION}",
    }
    follow(root, lines["pytest"])
    for command in COMMANDS:
        done = run_in(root, command)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed" in done.stdout
        assert "ERROR" not in done.stderr
    # Now they are: the same modules that were not imported before.
    assert {"myshop.main", "myshop.handlers"} <= set(imported(marker))
    assert any(name.endswith("test_handlers") for name in imported(marker))


def test_a_projects_own_app_module_stops_the_run_before_its_tests_are_imported(
    root: Path,
) -> None:
    # A flat FastAPI project: app.py, its handlers beside it.
    (root / ".env").write_text("WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=billing\n")
    (root / "app.py").write_text("from fastapi import FastAPI\n\napp = FastAPI()\n")
    (root / "billing.py").write_text(BILLING)
    (root / "test_billing.py").write_text(
        f"open({str(root / 'imported')!r}, 'w').close()\nimport billing\n" + USES_A_FIXTURE
    )
    line = the_one_line(run_in(root, "python -m pytest"))
    assert line == (
        f"ERROR: your module 'app' at {root / 'app.py'} clashes with rq-webhook-receiver's "
        "own top-level package 'app' (one Python process imports one 'app'): rename yours, "
        f"e.g. app.py -> myshop.py, and its imports{NO_OPTION}"
    )
    assert not (root / "imported").exists()


def test_a_project_with_a_top_level_handlers_module_runs_without_a_line(root: Path) -> None:
    (root / ".env").write_text("WEBHOOK_SOURCES=stripe\nWEBHOOK_HANDLERS=billing\n")
    (root / "pyproject.toml").write_text(PYTHONPATH_HERE)
    (root / "billing.py").write_text(BILLING)
    (root / "tests").mkdir()
    (root / "tests" / "test_billing.py").write_text(
        """
from billing import record_payment

from workers.testing import Deliver, EventFactory


def test_its_handlers(webhook_event: EventFactory, deliver: Deliver) -> None:
    outcome = deliver(webhook_event("stripe", "invoice.paid", {"amount_paid": 1}))
    assert outcome.states == {"record_payment": "done", "notify": "done", "audit": "done"}
    assert record_payment.__module__ == "billing"
"""
    )
    for command in COMMANDS:
        done = run_in(root, command)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed" in done.stdout
        assert "ERROR" not in done.stderr


def test_a_projects_own_app_is_left_alone_when_it_does_not_use_rq_webhook_receiver(
    root: Path,
) -> None:
    # A FastAPI project in an environment where rq-webhook-receiver is installed too.
    marker = fastapi_project(root)
    (root / "app" / "handlers.py").write_text("PAID = {'in_1': 1200}\n")
    (root / "tests" / "test_handlers.py").write_text(
        """
from fastapi.testclient import TestClient

from app.main import app


def test_its_app() -> None:
    assert TestClient(app).get("/paid/in_1").json() == 1200
"""
    )
    for command in COMMANDS:
        done = run_in(root, command)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed" in done.stdout
    assert imported(marker) == ["app.main", "app.main"]


def test_a_projects_own_app_stops_collection_in_one_line_once_a_fixture_is_used(
    pytester: pytest.Pytester,
) -> None:
    # Nothing of the project imports ours: the run stops when collection finds the fixture.
    fastapi_layout(pytester)
    pytester.makepyfile(test_user="from app.main import NAME\n" + USES_A_FIXTURE)
    line = one_error_line(pytest_process(pytester))
    assert line == (
        f"ERROR: your package 'app' at {pytester.path / 'app'} clashes with "
        "rq-webhook-receiver's own top-level package 'app' (one Python process imports one "
        f"'app'): {FIX}{NO_OPTION}"
    )


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
    assert line == (
        f"ERROR: your 'app' at {pytester.path / 'app'} has no __init__.py, so it merges with "
        f"rq-webhook-receiver's own top-level package 'app', and both hold 'main': {FIX}"
        f"{NO_OPTION}"
    )


def test_a_projects_own_workers_package_stops_the_run_before_its_tests_are_imported(
    root: Path,
) -> None:
    (root / ".env").write_text(ENV)
    (root / "workers").mkdir()
    (root / "workers" / "__init__.py").write_text("")
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_user.py").write_text(
        f"open({str(root / 'imported')!r}, 'w').close()\n"
        "from workers.testing import EventFactory\n" + USES_A_FIXTURE
    )
    for command in COMMANDS:
        line = the_one_line(run_in(root, command))
        assert line == (
            f"ERROR: your package 'workers' at {root / 'workers'} clashes with "
            "rq-webhook-receiver's own top-level package 'workers' (one Python process "
            f"imports one 'workers'): rename yours, e.g. workers -> jobs, and its imports"
            f"{NO_OPTION}"
        )
        assert not (root / "imported").exists()


def test_plain_pytest_in_importlib_mode_keeps_a_projects_unimported_app_off_the_path(
    root: Path,
) -> None:
    # Tests that use the fixtures, of a project whose own `app` they do not import: plain
    # pytest in importlib mode puts nothing of the project on sys.path, so `app` is ours.
    (root / ".env").write_text(ENV)
    (root / "app").mkdir()
    (root / "app" / "__init__.py").write_text("")
    (root / "tests").mkdir()
    (root / "tests" / "test_user.py").write_text(USES_A_FIXTURE)
    done = run_in(root, "pytest", "--import-mode=importlib")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_handler_api_the_prediction_looks_for_is_what_workers_exports() -> None:
    # A project that imports one of these from `workers` uses rq-webhook-receiver.
    assert set(workers.__all__) == API


def test_the_testing_page_shows_the_line_as_the_plugin_says_it() -> None:
    line = Theirs("app", Path("/home/me/shop/app"), "package").said()
    assert f"\n  ERROR: {line}\n" in (ROOT / "docs" / "testing.md").read_text()
