"""The import graph of `app/` and `workers/`: no circle, and every module importable first.

A circle between modules works in Python only in the order the interpreter happened to meet
them: the first import from elsewhere that enters it halfway fails. Every import counts,
those inside functions too (a lazy import is still an edge: it only hides the circle until
that function runs), except those under `if TYPE_CHECKING:` (never run) and a module's
implied import of its own packages (Python runs a package's `__init__` before any of its
modules, whatever either imports).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.processes import unmeasured

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "workers")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def names_imported(node: ast.AST, module: str, is_package: bool) -> set[str]:
    """What one statement of `module` imports (relative imports resolved): each module
    named, and each name taken from one (which may be a module)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that `name` imports, anywhere in its body."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            found.update(names_imported(node, name, is_package))
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit([c for c in children if isinstance(c, ast.stmt | ast.excepthandler)])

    visit(ast.parse(path.read_text()).body)
    own_packages = {".".join(name.split(".")[:n]) for n in range(1, name.count(".") + 1)}
    return {m for m in found if m in known and m != name and m not in own_packages}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_no_module_of_app_or_workers_is_in_an_import_circle() -> None:
    known = modules()
    graph = {name: imported(name, path, set(known)) for name, path in known.items()}
    assert cycles(graph) == []


def test_the_graph_sees_a_circle_through_a_lazy_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def third_party(known: dict[str, Path]) -> list[str]:
    """The top-level packages our modules import that are neither ours nor the stdlib's."""
    found: set[str] = set()
    for path in known.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return sorted(found - set(PACKAGES) - set(sys.stdlib_module_names) - {"__future__"})


# Imports the libraries (not ours), then forks a child per module of ours, two at a time:
# each child starts as a fresh interpreter that has imported nothing of the project.
_FIRST_IMPORTS = """
import importlib, os, sys
libraries, names = sys.argv[1].split(","), sys.argv[2:]
for library in libraries:
    try:
        importlib.import_module(library)
    except ImportError:
        pass  # an optional extra's: our module that needs it says so below
assert not [m for m in sys.modules if m.split(".")[0] in ("app", "workers")]
failed, running = [], {}

def reap():
    pid, status = os.wait()
    if status:
        failed.append(running[pid])
    del running[pid]

for name in names:
    if len(running) >= 2:
        reap()
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            print(name, type(exc).__name__, exc, flush=True)
            os._exit(1)
        os._exit(0)
    running[pid] = name
while running:
    reap()
print("FAILED", sorted(failed))
"""


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    known = modules()
    # A `__main__` is run (`python -m workers`), not imported: importing it runs the command.
    names = sorted(name for name in known if not name.endswith(".__main__"))
    env = unmeasured(
        {k: v for k, v in os.environ.items() if not k.startswith(("WEBHOOK_", "OTEL_"))}
    )
    ran = subprocess.run(
        [sys.executable, "-c", _FIRST_IMPORTS, ",".join(third_party(known)), *names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=110,
    )
    assert ran.stdout.strip().splitlines()[-1:] == ["FAILED []"], ran.stdout + ran.stderr
