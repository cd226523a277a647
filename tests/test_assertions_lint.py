"""The lint that every test can fail: it finds one that asserts nothing, and passes the rest."""

from __future__ import annotations

from pathlib import Path

from tests.assertions_lint import main, unchecked


def test_a_test_that_asserts_nothing_is_named(tmp_path: Path) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(
        "import pytest\n"
        "def test_calls_only():\n    sorted([2, 1])\n"
        "def test_asserts():\n    assert sorted([2, 1]) == [1, 2]\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n"
        "def test_helper(result):\n    result.assert_outcomes(passed=1)\n"
        "def helper_without_prefix():\n    pass\n"
    )
    assert unchecked(module) == [f"{module}:2: test_calls_only asserts nothing"]
    assert main([str(module)]) == 1


def test_every_test_of_the_suite_can_fail() -> None:
    assert main([]) == 0
