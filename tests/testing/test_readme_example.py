"""The worked example of testing handlers (examples/handler_tests/) passes, and
docs/testing.md shows it as it is, so neither can drift from the other."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import ROOT
from tests.testing.project import run

EXAMPLE = ROOT / "examples" / "handler_tests"


def test_the_worked_example_passes(pytester: pytest.Pytester) -> None:
    for module in EXAMPLE.glob("*.py"):
        shutil.copy(module, pytester.path / module.name)
    run(pytester).assert_outcomes(passed=6)


@pytest.mark.parametrize("module", ["shop_hooks.py", "test_shop_hooks.py"])
def test_the_testing_page_shows_the_example_module_as_it_is(module: str) -> None:
    block = "```python\n" + (EXAMPLE / module).read_text() + "```\n"
    assert block in (ROOT / "docs" / "testing.md").read_text()
