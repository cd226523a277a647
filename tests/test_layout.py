"""The layout of docs/internals.md, held: code is split by the process that runs it, and
modules stay short.

Each module belongs to one part (the longest of `PARTS` its name starts with, or `OWNED`),
and may import only the parts `MAY_IMPORT` lists for it: the worker's runtime never the
operator's tools nor make run's stack, the receiver (`app`) nothing of `workers`. Every
import counts, a lazy one inside a function too (it is an edge all the same, only hidden
until that function runs), and one under `if TYPE_CHECKING:`: what the types of a part
need, the part needs. A module of more than `MAX_LINES` lines holds more than one concern.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_import_graph import ROOT, names_imported

PACKAGES = ("app", "workers", "pytest_webhook_receiver")
MAX_LINES = 300

# The parts, by the process that runs them.
PARTS = (
    "app",  # the receiver, and what every process shares (settings, keys, logs...)
    "workers",  # the handler API: Event, PermanentError, @handler, the version guard
    "workers.runtime",  # the worker process
    "workers.ops",  # the webhooks command and the dashboard
    "workers.dev",  # make run's local stack
    "workers.signing",  # the signers of webhooks send and the pytest plugin
    "workers.testing",  # the pytest plugin's fixtures
    "pytest_webhook_receiver",  # the plugin's entry point
    "pytest_webhook_receiver.clash",  # the clash check, which the worker runs too
)
# Modules whose place is fixed by a name users or stored jobs rely on, not by what runs them.
OWNED = {
    "workers.job": "workers.runtime",  # the import paths every queued job names
    "workers.__main__": "workers.ops",  # `python -m workers` is the webhooks command
}
MAY_IMPORT: dict[str, frozenset[str]] = {
    "app": frozenset({"app"}),
    "workers": frozenset({"app", "workers"}),
    "workers.runtime": frozenset(
        {"app", "workers", "workers.runtime", "pytest_webhook_receiver.clash"}
    ),
    "workers.signing": frozenset({"app", "workers.signing"}),
    "workers.dev": frozenset({"app", "workers.dev", "workers.signing"}),
    "workers.ops": frozenset(
        {"app", "workers", "workers.runtime", "workers.ops", "workers.dev", "workers.signing"}
    ),
    "workers.testing": frozenset(
        {"app", "workers", "workers.runtime", "workers.dev", "workers.signing", "workers.testing"}
    ),
    "pytest_webhook_receiver": frozenset(
        {"app", "workers.testing", "pytest_webhook_receiver", "pytest_webhook_receiver.clash"}
    ),
    "pytest_webhook_receiver.clash": frozenset({"pytest_webhook_receiver.clash"}),
}


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module of `PACKAGES` under `root`."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def part_of(module: str) -> str:
    if module in OWNED:
        return OWNED[module]
    return max((p for p in PARTS if module == p or module.startswith(p + ".")), key=len)


def imports_of(module: str, path: Path) -> set[str]:
    """Every module name `module` imports, anywhere in its body, relative imports resolved."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        found.update(names_imported(node, module, is_package))
    return found


def forbidden_imports(files: dict[str, Path]) -> list[str]:
    """`importer -> imported` for each import of one part by another that may not."""
    found = []
    for module, path in files.items():
        allowed = MAY_IMPORT[part_of(module)]
        for name in sorted(imports_of(module, path)):
            if name in files and part_of(name) not in allowed:
                found.append(f"{module} -> {name}")
    return found


def long_modules(root: Path) -> list[str]:
    found = []
    for path in module_files(root).values():
        count = len(path.read_text().splitlines())
        if count > MAX_LINES:
            found.append(f"{path.relative_to(root)}: {count}")
    return found


def test_every_part_imports_only_the_parts_it_may() -> None:
    assert forbidden_imports(module_files(ROOT)) == []


def test_no_module_is_longer_than_the_limit() -> None:
    assert long_modules(ROOT) == []


def test_every_module_belongs_to_a_part_with_rules() -> None:
    assert {part_of(module) for module in module_files(ROOT)} <= set(MAY_IMPORT)


# The check itself: it must see what it is there to catch.


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_check_sees_the_runtime_importing_the_operators_tools_lazily(tmp_path: Path) -> None:
    write(tmp_path, "workers/ops/redact.py", "MARKER = '[redacted]'\n")
    write(tmp_path, "workers/runtime/scrub.py", "def f():\n    from ..ops import redact\n")
    write(tmp_path, "workers/runtime/report.py", "import workers.ops.redact\n")
    assert forbidden_imports(module_files(tmp_path)) == [
        "workers.runtime.report -> workers.ops.redact",
        "workers.runtime.scrub -> workers.ops.redact",
    ]


def test_the_check_sees_the_receiver_importing_workers_under_type_checking(
    tmp_path: Path,
) -> None:
    write(tmp_path, "workers/event.py", "class Event: ...\n")
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import workers.event\n"
    write(tmp_path, "app/receiver.py", typed)
    assert forbidden_imports(module_files(tmp_path)) == ["app.receiver -> workers.event"]


def test_the_check_sees_a_module_one_line_over_the_limit(tmp_path: Path) -> None:
    write(tmp_path, "workers/dev/keys.py", "x = 1\n" * (MAX_LINES + 1))
    write(tmp_path, "workers/dev/stack.py", "x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == [f"workers/dev/keys.py: {MAX_LINES + 1}"]
