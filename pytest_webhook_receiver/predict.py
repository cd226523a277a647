"""Where the `app` and `workers` of a pytest run will come from, said before it imports any
of the project's conftest or test modules: the plugin stops the run then, in one line, when
they would be the project's own and the project uses rq-webhook-receiver (`clash.py`).

What puts a directory on sys.path in a run, and so is predicted here:
- what is there already: the current directory for `python -m pytest`, PYTHONPATH, the
  `pythonpath =` setting (pytest added it before loading plugins), site-packages;
- in the `prepend` import mode (pytest's default) and the `append` one, each conftest.py
  and test module adds its base directory: the first one upward without `__init__.py`
  (`rootdir/` for `rootdir/tests/test_x.py` when tests/ is a package, `rootdir/tests/`
  when it is not); `importlib` adds none.
And a project's own regular `app` (or `workers`) in the root directory or the current one
counts even off sys.path: its modules cannot be imported beside ours, which has the name.

"Uses rq-webhook-receiver": one of the modules the run imports first, the test modules,
conftest.py files and `__init__.py` files of the run, the modules at the top of the
project's directories above, or those of the clashing package itself (handlers inside
`app/`), imports `workers.testing` or the handler API from `workers`. A project that has an
`app` of its own and does not use rq-webhook-receiver keeps it, as without the plugin.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_webhook_receiver.clash import PACKAGES, Theirs, off_path, on_path

# `from workers import ...` of these (`workers.__all__`, pinned by the tests) or an import
# of `workers.testing` is a use of ours.
API = frozenset({"Event", "PermanentError", "handler", "newer_version"})
TESTING = "workers.testing"


@dataclass(frozen=True)
class Run:
    """What pytest is about to collect, and how it will import it."""

    invocation_dir: Path
    rootpath: Path
    args: Sequence[Path]  # the collection paths: given, `testpaths`, or the current directory
    import_mode: str = "prepend"
    python_files: Sequence[str] = ("test_*.py", "*_test.py")
    norecursedirs: Sequence[str] = ()
    confcutdir: Path | None = None
    into_virtualenvs: bool = False
    pythonpath: Sequence[Path] = field(default_factory=list)


def predicted_clash(run: Run, path: Sequence[str] | None = None) -> str | None:
    """The one line, when the run's `app` or `workers` would clash with ours and the project
    uses rq-webhook-receiver; None otherwise."""
    imported = list(_imported_first(run))
    added: list[Path] = []
    if run.import_mode in ("prepend", "append"):
        added = list(dict.fromkeys(_basedir(module) for module in imported))
    now = [_entry(p) for p in (sys.path if path is None else path)]
    entries = [*added, *now] if run.import_mode == "prepend" else [*now, *added]
    known = {_resolved(entry) for entry in entries}
    roots = [r for r in (run.rootpath, run.invocation_dir) if _resolved(r) not in known]
    for name in PACKAGES:
        theirs = on_path(name, entries)
        for root in roots:
            theirs = theirs or off_path(name, root)
        if theirs is None:
            continue
        tops = [run.rootpath, run.invocation_dir, *run.pythonpath, *added]
        if uses_us([*imported, *_top_modules(tops), *_package_modules(theirs)]):
            return theirs.said()
    return None


def uses_us(modules: Iterable[Path]) -> bool:
    """Whether one of `modules` imports our handler API or `workers.testing`."""
    return any(_imports_ours(module) for module in modules)


def _imports_ours(module: Path) -> bool:
    try:
        source = module.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "workers" not in source:  # most modules: no parse
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "workers" and any(alias.name in API for alias in node.names):
                return True
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        if any(name == TESTING or name.startswith(f"{TESTING}.") for name in names):
            return True
    return False


def _imported_first(run: Run) -> Iterator[Path]:
    """The run's conftest.py files, test modules and their packages' `__init__.py`."""
    seen: set[Path] = set()
    for arg in run.args:
        start = arg if arg.is_dir() else arg.parent
        for directory in _up_to(start, run.confcutdir or run.rootpath):
            conftest = directory / "conftest.py"
            if conftest.is_file() and conftest not in seen:
                seen.add(conftest)
                yield conftest
        if arg.is_file():
            candidates: Iterable[Path] = [arg] if arg.suffix == ".py" else []
        elif arg.is_dir():
            candidates = _walk(arg, run)
        else:
            candidates = []
        for module in candidates:
            for found in (module, *_inits(module.parent)):
                if found not in seen:
                    seen.add(found)
                    yield found


def _walk(top: Path, run: Run) -> Iterator[Path]:
    """The test modules and conftest.py files pytest collects under `top`."""
    for directory, subdirectories, files in os.walk(top):
        here = Path(directory)
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if name != "__pycache__"
            and not any(fnmatch.fnmatch(name, pattern) for pattern in run.norecursedirs)
            and (run.into_virtualenvs or not _virtualenv(here / name))
        )
        for name in sorted(files):
            if name == "conftest.py" or (
                name.endswith(".py") and any(fnmatch.fnmatch(name, p) for p in run.python_files)
            ):
                yield here / name


def _virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file() or (directory / "conda-meta" / "history").is_file()


def _up_to(start: Path, top: Path) -> list[Path]:
    """`start` and its parents up to `top` (only `start` when it is not under `top`)."""
    if start != top and top not in start.parents:
        return [start]
    found = [start]
    while found[-1] != top:
        found.append(found[-1].parent)
    return found


def _inits(directory: Path) -> Iterator[Path]:
    while (directory / "__init__.py").is_file():
        yield directory / "__init__.py"
        directory = directory.parent


def _basedir(module: Path) -> Path:
    """The directory pytest's prepend/append import modes put on sys.path for `module`."""
    directory = module.parent
    while (directory / "__init__.py").is_file():
        directory = directory.parent
    return directory


def _top_modules(directories: Iterable[Path]) -> Iterator[Path]:
    for directory in dict.fromkeys(directories):
        try:
            yield from sorted(directory.glob("*.py"))
        except OSError:
            continue


def _package_modules(theirs: Theirs) -> Iterator[Path]:
    if theirs.kind == "module":
        yield theirs.path
        return
    for directory, subdirectories, files in os.walk(theirs.path):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__" and d[:1] != "."]
        yield from (Path(directory) / name for name in files if name.endswith(".py"))


def _entry(entry: str) -> Path:
    return Path(entry or os.curdir).absolute()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return path
