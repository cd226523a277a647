"""Whether a project's own top-level `app` or `workers` clashes with rq-webhook-receiver's,
found without importing either, and the one line that says so. Standard library only: the
pytest plugin uses it before a run imports anything of the project (`run.py`), and the
worker for its WEBHOOK_HANDLERS (`workers/runtime/run.py`).

One Python process has one module of each name. Ours are `app`, a namespace package (no
`__init__.py`), and `workers`, a regular one. Along sys.path, the first directory that
holds a regular package (with `__init__.py`) or a module (`name.py`) of the name wins;
directories of the name without `__init__.py` are merged into one namespace package only
when there is no such winner. So:
- a project's regular `app` (the usual FastAPI layout) or `app.py`, anywhere on sys.path,
  wins over our namespace `app`, and our code's `from app.settings import ...` fails;
- a project's `app` without `__init__.py` merges with ours: that works as long as the two
  hold no module of the same name (`app/billing.py` beside our `app/main.py`), and is a
  clash as soon as they do, whichever comes first;
- a project's regular `workers` (or `workers.py`) before ours on sys.path wins over it;
- a project's regular `app` that is off sys.path is no better: while ours has the name,
  `from app.handlers import ...` looks in ours.
Our own code imports `app.*` and `workers.*` absolutely, so the two cannot share a process,
and merging them would hand the project's `from app.main import app` our module. Every clash
has one fix, whatever the import mode: the project's package takes another name.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

# Where this distribution put `app` and `workers`: beside this package, in site-packages
# or, for an editable install, in the checkout.
HOME = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "workers")
# The name the advice gives a project's package instead (the docs' worked example's).
RENAMED = {"app": "myshop", "workers": "jobs"}

Kind = Literal["package", "module", "namespace"]


@dataclass(frozen=True)
class Theirs:
    """A project's own top-level `app` or `workers` that clashes with ours."""

    name: str
    path: Path
    kind: Kind
    shared: tuple[str, ...] = ()  # a namespace package's modules named like ours
    # The project's directory that holds it, when a test run does not put it on sys.path.
    off_path: Path | None = None

    def said(self, pytest: bool = True) -> str:
        """The clash and its fix, in one line."""
        name, ours = self.name, f"rq-webhook-receiver's own top-level package {self.name!r}"
        if self.shared:
            what = (
                f"your {name!r} at {self.path} has no __init__.py, so it merges with {ours}, "
                f"and both hold {', '.join(repr(s) for s in self.shared)}"
            )
        elif self.kind == "namespace":
            what = f"the {name!r} this process imports is {self.path}, not {ours}"
        else:
            what = (
                f"your {self.kind} {name!r} at {self.path} clashes with {ours} (one Python "
                f"process imports one {name!r})"
            )
        new = RENAMED[name]
        if self.kind == "module":
            fix = f"rename yours, e.g. {name}.py -> {new}.py, and its imports"
        else:
            fix = f"rename yours, e.g. {name} -> {new}, and its imports"
            if name == "app":
                fix += f" (from {new}.handlers import ..., WEBHOOK_HANDLERS={new}.handlers)"
        if self.off_path is not None:
            fix += f", with {self.off_path} on sys.path (pytest's `pythonpath` setting)"
        if pytest:
            fix += ": no import mode or pytest option makes both importable in one process"
        return f"{what}: {fix}"


def found(directory: Path, name: str) -> tuple[Kind, Path] | None:
    """What `directory`, as a sys.path entry, holds under `name`, as Python's path finder
    ranks it: a regular package, then a module, then a namespace portion."""
    package = directory / name
    try:
        if (package / "__init__.py").is_file():
            return "package", package
        if (directory / f"{name}.py").is_file():
            return "module", directory / f"{name}.py"
        if package.is_dir():
            return "namespace", package
    except OSError:
        pass
    return None


def on_path(name: str, entries: Iterable[Path]) -> Theirs | None:
    """The project's `name` that clashes with ours when sys.path is `entries`, if any."""
    ours = HOME / name
    regular = (ours / "__init__.py").is_file()
    portions: list[Path] = []
    for entry in entries:
        hit = found(entry, name)
        if hit is None:
            continue
        kind, path = hit
        if same(path, ours):
            if regular:
                return None  # ours comes first
            continue
        if kind != "namespace":
            return Theirs(name, path, kind)
        if not regular:  # no merging with a regular package: ours wins
            portions.append(path)
    return merged(name, portions)


def off_path(name: str, directory: Path) -> Theirs | None:
    """The project's regular `name` in `directory` (its root), which is off sys.path."""
    hit = found(directory, name)
    if hit is None or hit[0] == "namespace":
        return None
    theirs = regular_at(name, hit[1])
    return None if theirs is None else replace(theirs, off_path=directory)


def regular_at(name: str, path: Path) -> Theirs | None:
    """The regular package (a directory) or module (a file) `path`, unless it is ours."""
    if same(path, HOME / name):
        return None
    return Theirs(name, path, "module" if path.suffix == ".py" else "package")


def merged(name: str, portions: Iterable[Path]) -> Theirs | None:
    """The first namespace portion that holds a module named like one of ours."""
    own = entries(HOME / name)
    for portion in portions:
        if same(portion, HOME / name):
            continue
        shared = tuple(sorted(own & entries(portion)))
        if shared:
            return Theirs(name, portion, "namespace", shared)
    return None


def clash() -> str | None:
    """One line naming the clash and what to do, or None when the `app` and `workers` this
    process imports (or has imported) are ours."""
    for name in PACKAGES:
        where = _imported(name)
        if where is None:
            return (
                f"rq-webhook-receiver's top-level package {name!r} cannot be found from here "
                "(is rq-webhook-receiver installed?)"
            )
        regular, portions = where
        if regular:
            theirs = regular_at(name, portions[0])
        elif not any(same(p, HOME / name) for p in portions):
            theirs = Theirs(name, portions[0], "namespace")
        else:
            theirs = merged(name, portions)
        if theirs is not None:
            return theirs.said()
    return None


def _imported(name: str) -> tuple[bool, list[Path]] | None:
    """(is a regular package or module, where) of what `import name` gives now."""
    module = sys.modules.get(name)
    if module is not None:
        origin = getattr(module, "__file__", None)
        path = getattr(module, "__path__", None)
        if origin is not None:
            return True, [_top(Path(origin), path is not None)]
        return False, [Path(p) for p in path or ()]
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin is not None and spec.has_location:
        return True, [_top(Path(spec.origin), spec.submodule_search_locations is not None)]
    return False, [Path(p) for p in spec.submodule_search_locations or ()]


def _top(origin: Path, package: bool) -> Path:
    """The package directory of an `__init__.py`, or the module file itself."""
    return origin.parent if package else origin


def entries(package: Path) -> set[str]:
    """The module and subpackage names in a package directory."""
    try:
        children = list(package.iterdir())
    except OSError:
        return set()
    return {
        child.name.removesuffix(".py")
        for child in children
        if (child.suffix == ".py" and child.name != "__init__.py")
        or (child.is_dir() and child.name != "__pycache__")
    }


def same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
