"""`make test-newest`: the tests that pin the libraries' internals, against their newest releases.

RQ, rq-dashboard, uvicorn, redis-py, FastAPI and Starlette are pinned to the versions whose
internals the code was checked against (docs/internals.md lists each internal and the test
that pins it). The day a new release ships, this says whether the pins can be widened:

1. a throwaway venv gets this checkout with its test extras (the pinned versions), then the
   newest release the index serves of each pinned library, whatever the pins say;
2. the pinning tests (every test file docs/internals.md names) and the end-to-end tests
   (marker `e2e`) run there, as `make test` runs them (pytest-xdist);
3. a table says, per library, the range pyproject.toml allows, the newest release, and what
   to do: nothing (the newest is allowed), widen the pin (the newest is outside it and the
   tests pass), or keep it (they fail: the internals moved; read the failures).

    python tests/newest.py [--keep DIR] [--pytest-args "..."]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version
from throwaway_venv import ROOT, Venv, must_run, pinning_tests

# The libraries whose internals the code relies on, or whose ceiling sits at a release.
WATCHED = (
    "rq",
    "rq-dashboard",
    "redis",
    "fastapi",
    "starlette",
    "uvicorn",
    "cryptography",
    # The suite's own scheduling (tests/test_suite_groups.py): `make test` runs on both.
    "pytest",
    "pytest-xdist",
)


@dataclass(frozen=True, slots=True)
class Pin:
    name: str
    requirement: Requirement
    newest: Version

    @property
    def allowed(self) -> bool:
        return self.requirement.specifier.contains(self.newest, prereleases=False)

    def verdict(self, passed: bool) -> str:
        if self.allowed:
            return "nothing to do: the newest is allowed"
        if passed:
            return f"widen: {self.newest} passes (e.g. <{_next_minor(self.newest)})"
        return f"keep: {self.newest} fails the pinning tests"


def _next_minor(version: Version) -> str:
    major, minor = (*version.release, 0, 0)[:2]
    return f"{major}.{minor + 1}"


def declared() -> dict[str, Requirement]:
    """pyproject.toml's requirements of the watched libraries, by name: the runtime ones and
    the extras `make test` installs, a library named twice (pytest) held to both ranges."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    found: dict[str, Requirement] = {}
    for line in [*project["dependencies"], *extras["testing"], *extras["test"]]:
        requirement = Requirement(line)
        name = requirement.name.lower()
        if name not in WATCHED:
            continue
        if name in found:
            requirement.specifier &= found[name].specifier
        found[name] = requirement
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Build the venv here, and keep it.")
    parser.add_argument("--pytest-args", default="", help="Passed on to pytest.")
    args = parser.parse_args()
    pins = declared()
    tests = pinning_tests()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Venv(args.keep or Path(tmp))
        if venv.create(reuse=args.keep is not None):
            must_run([*venv.pip, "-e", f"{ROOT}[test]"], venv.log)
        # The newest releases, past the pins: pip warns of the conflict, and installs them.
        must_run([*venv.pip, "--upgrade", *WATCHED], venv.log)
        newest = [Pin(n, pins[n], venv.installed(n)) for n in WATCHED if n in pins]
        print(f"running {len(tests)} pinning test files and the end-to-end tests ...", flush=True)
        passed = venv.run_tests(tests, args.pytest_args)
    width = max(len(p.name) for p in newest)
    print(f"\n{'library':<{width}}  {'pyproject.toml':<22}  {'newest':<10}  verdict")
    for pin in newest:
        allowed = str(pin.requirement.specifier)
        print(f"{pin.name:<{width}}  {allowed:<22}  {pin.newest!s:<10}  {pin.verdict(passed)}")
    print("\nthe pinning tests " + ("pass" if passed else "FAIL") + " on the newest releases")
    print("not run here: the tests that run `make run` (they use the checkout's .venv); run")
    print("them with `make test` after widening a pin")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
