"""Whether rq-webhook-receiver's top-level packages, `app` and `workers`, are the ones this
process would import, checked without importing either.

One Python process has one module of each name. A project with its own `app` (the usual
FastAPI layout) or `workers` package, on sys.path in the test run, takes the name: a
regular package (with `__init__.py`) wins wherever it is on sys.path. Our `app` is a
namespace package (no `__init__.py`), so a user's `app` that is one too merges with it:
that works as long as the two hold no module of the same name (`app/webhooks.py` beside
our `app/main.py`), and is a clash as soon as they do, whichever comes first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# Where this distribution put `app` and `workers`: beside this package, in site-packages
# or, for an editable install, in the checkout.
HOME = Path(__file__).resolve().parent.parent
PACKAGES = ("workers", "app")
WHAT_TO_DO = (
    "rename your package (e.g. to 'myproject'), or keep it off sys.path in this run "
    "(plain `pytest --import-mode=importlib`, not `python -m pytest`, and no rootdir "
    "conftest.py or pythonpath= that adds its directory)"
)


def clash() -> str | None:
    """One line naming the clash and what to do, or None when both packages are ours."""
    for name in PACKAGES:
        problem = _check(name)
        if problem is not None:
            return (
                f"rq-webhook-receiver's fixtures need its own top-level package {name!r}, but "
                f"{problem}; {WHAT_TO_DO}"
            )
    return None


def _check(name: str) -> str | None:
    ours = HOME / name
    found = _locations(name)
    if found is None:
        return f"{name!r} cannot be found from here (is rq-webhook-receiver installed?)"
    regular, portions = found
    if regular:
        where = Path(portions[0])
        if _same(where, ours):
            return None
        return f"{name!r} here is {where}, and one Python process imports only one {name!r}"
    if not any(_same(Path(p), ours) for p in portions):
        return f"{name!r} here is {', '.join(portions)}, not rq-webhook-receiver's"
    own = _entries(ours)
    for portion in portions:
        if _same(Path(portion), ours):
            continue
        shared = sorted(own & _entries(Path(portion)))
        if shared:
            return (
                f"your {name!r} at {portion} has no __init__.py, so it merges with "
                f"rq-webhook-receiver's, and both hold {', '.join(repr(s) for s in shared)}"
            )
    return None


def _locations(name: str) -> tuple[bool, list[str]] | None:
    """(is a regular package or module, where it is) of what `import name` gives now."""
    module = sys.modules.get(name)
    if module is not None:
        path = getattr(module, "__path__", None)
        origin = getattr(module, "__file__", None)
        if path is None:
            return True, [str(origin)]
        return origin is not None, [str(Path(origin).parent)] if origin else list(path)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations is None:
        return True, [str(spec.origin)]
    if spec.origin is not None and spec.has_location:
        return True, [str(Path(spec.origin).parent)]
    return False, list(spec.submodule_search_locations)


def _entries(package: Path) -> set[str]:
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


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
