"""constraints.txt, the checkout's lock: within pyproject.toml's ranges, complete, and what
this environment (`make test`'s .venv) runs."""

from __future__ import annotations

import tomllib
from importlib.metadata import Distribution, distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NAME = canonicalize_name(PROJECT["name"])


def locked(text: str) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints.txt: {line!r} is not name==version"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def declared() -> list[Requirement]:
    """Every requirement pyproject.toml states, the extras' too, but the project's own."""
    lines = [*PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        lines += extra
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) != NAME]


def outside_ranges(pins: dict[str, Version]) -> list[str]:
    problems = []
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement} is not in constraints.txt")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"constraints.txt has {name}=={pins[name]}, outside {requirement}")
    return problems


def test_every_locked_version_is_inside_pyproject_ranges() -> None:
    assert outside_ranges(locked((ROOT / "constraints.txt").read_text())) == []


def test_a_lock_entry_outside_a_range_is_reported() -> None:
    pins = locked((ROOT / "constraints.txt").read_text())
    pins["redis"] = Version("9.0.0")
    del pins["rq"]
    problems = outside_ranges(pins)
    assert any(p.startswith("constraints.txt has redis==9.0.0, outside redis") for p in problems)
    assert any(p.startswith("rq<3.1,>=3.0 is not in constraints.txt") for p in problems), problems


def _installed() -> dict[str, Distribution]:
    return {
        canonicalize_name(d.metadata["Name"]): d
        for d in distributions()
        if canonicalize_name(d.metadata["Name"]) not in {NAME, "pip", "setuptools", "wheel"}
    }


def test_this_environment_runs_the_locked_versions() -> None:
    pins = locked((ROOT / "constraints.txt").read_text())
    installed = _installed()
    wrong = {
        name: f"{dist.version} (locked: {pins.get(name, 'not locked')})"
        for name, dist in installed.items()
        if pins.get(name) != Version(dist.version)
    }
    assert wrong == {}, "run `make install-test`, or `make lock` after changing pyproject.toml"


def test_what_the_lock_holds_but_is_not_installed_is_needed_by_nothing_installed() -> None:
    """The embedded redis-server extra is installed only where no redis-server is on the
    PATH: its packages may be missing, but nothing installed may need them."""
    pins = locked((ROOT / "constraints.txt").read_text())
    installed = _installed()
    needed = set()
    for dist in installed.values():
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                needed.add(canonicalize_name(requirement.name))
    assert needed & (set(pins) - set(installed)) == set()
