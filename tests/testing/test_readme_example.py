"""The worked example of testing handlers (examples/handler_tests/, a FastAPI-style package
under its own name) passes, and docs/testing.md shows it as it is, so neither can drift from
the other."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import ROOT
from tests.testing.project import run

EXAMPLE = ROOT / "examples" / "handler_tests"
FILES = ("pyproject.toml", "myshop/__init__.py", "myshop/main.py", "myshop/handlers.py")


def test_the_worked_example_passes(pytester: pytest.Pytester) -> None:
    for name in (*FILES, "tests/test_handlers.py"):
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLE / name, pytester.path / name)
    run(pytester).assert_outcomes(passed=7)


@pytest.mark.parametrize("name", ["myshop/main.py", "myshop/handlers.py", "tests/test_handlers.py"])
def test_the_testing_page_shows_the_example_module_as_it_is(name: str) -> None:
    block = "```python\n" + (EXAMPLE / name).read_text() + "```\n"
    assert block in (ROOT / "docs" / "testing.md").read_text()


def test_the_testing_page_shows_the_examples_pytest_configuration_as_it_is() -> None:
    block = "```toml\n" + (EXAMPLE / "pyproject.toml").read_text() + "```\n"
    assert block in (ROOT / "docs" / "testing.md").read_text()
