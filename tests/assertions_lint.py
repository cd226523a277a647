"""`make lint`: every test function can fail.

A test passes when nothing raises; one with no assertion passes whatever the code does,
unless something it calls raises. Each `test_*` function must hold an `assert`, a
`pytest.raises` or `pytest.fail`, or call a helper named for what it checks (`assert_*`,
`check_*`, `expect_*`: pytester's `assert_outcomes`, a case's `assert_agrees`).

    python tests/assertions_lint.py [FILE...]
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CHECKING = ("assert", "check_", "expect")


def _called(node: ast.AST) -> Iterator[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            function = child.func
            if isinstance(function, ast.Attribute):
                yield function.attr
            elif isinstance(function, ast.Name):
                yield function.id


def can_fail(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if any(isinstance(child, ast.Assert) for child in ast.walk(function)):
        return True
    source = ast.unparse(function)
    if "pytest.raises" in source or "pytest.fail" in source:
        return True
    return any(name.startswith(CHECKING) for name in _called(function))


def unchecked(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path}:{node.lineno}: {node.name} asserts nothing"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
        and not can_fail(node)
    ]


def main(paths: list[str]) -> int:
    files = [Path(p) for p in paths] or sorted(TESTS.rglob("test_*.py"))
    found = [line for path in files for line in unchecked(path)]
    print("\n".join(found) or f"every test function of {len(files)} files can fail")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
