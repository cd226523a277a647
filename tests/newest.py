"""`make test-newest`: the checkout on the newest releases, in a throwaway venv, in two steps.

`make test` installs constraints.txt (the lock), so a release within a range never reaches
it unasked; this is where newer releases are tried:

1. the lock's entries: a throwaway venv gets this checkout with its test extras (every
   extra, the type checker and the test tools included) at the newest releases
   pyproject.toml's ranges admit; mypy, the pinning tests (every test file
   docs/internals.md names) and the end-to-end tests (marker `e2e`) run there, as `make
   test` runs them. A list says which lock entries that moved (`name locked -> newest`), and
   whether they pass: then `make lock`, `make test`, and commit constraints.txt;
2. the pins: RQ, rq-dashboard, uvicorn, redis-py, FastAPI, Starlette (the versions whose
   internals the code was checked against: docs/internals.md) and the other watched
   libraries at their newest release, whatever the pins say; the same checks run again,
   and a table says, per library, the range pyproject.toml allows, the newest release, and
   what to do: nothing (the newest is allowed), widen the pin (the newest is outside it and
   the checks pass), or keep it (they fail: the internals moved; read the failures).

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
from packaging.utils import canonicalize_name
from packaging.version import Version
from throwaway_venv import ROOT, Venv, must_run, pinning_tests, run

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


def locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[canonicalize_name(name)] = Version(version)
    return pins


def checks_pass(venv: Venv, tests: list[str], pytest_args: str) -> bool:
    """mypy (strict, as `make typecheck`), then the pinning and end-to-end tests."""
    print("running mypy ...", flush=True)
    cache = venv.where / "mypy-cache"  # not the checkout's, which its own mypy keeps
    typed = run([str(venv.python), "-m", "mypy", "--cache-dir", str(cache)], venv.log, cwd=ROOT)
    print("mypy " + ("passes" if typed else f"FAILS (see {venv.log})"), flush=True)
    print(f"running {len(tests)} pinning test files and the end-to-end tests ...", flush=True)
    return venv.run_tests(tests, pytest_args) and typed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Build the venv here, and keep it.")
    parser.add_argument("--pytest-args", default="", help="Passed on to pytest.")
    args = parser.parse_args()
    pins = declared()
    tests = pinning_tests()
    lock = locked()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Venv(args.keep or Path(tmp))
        venv.create(reuse=args.keep is not None)
        # 1. Every lock entry at the newest its range admits.
        print("step 1: the lock's entries at the newest releases their ranges admit", flush=True)
        must_run(
            [*venv.pip, "--upgrade", "--upgrade-strategy", "eager", "-e", f"{ROOT}[test]"], venv.log
        )
        moved = {
            name: (lock[name], version)
            for name, version in venv.distributions().items()
            if name in lock and version != lock[name]
        }
        lock_passed = checks_pass(venv, tests, args.pytest_args)
        # 2. The watched libraries past their pins: pip warns of the conflict, and installs them.
        print("\nstep 2: the watched libraries at their newest releases, past the pins", flush=True)
        must_run([*venv.pip, "--upgrade", *WATCHED], venv.log)
        newest = [Pin(n, pins[n], venv.installed(n)) for n in WATCHED if n in pins]
        passed = checks_pass(venv, tests, args.pytest_args)
    print(f"\nstep 1: {len(moved)} lock entries (constraints.txt) have newer releases in range:")
    for name, (old, new) in sorted(moved.items()):
        print(f"  {name} {old} -> {new}")
    if not moved:
        print("  none: the lock is the newest")
    elif lock_passed:
        print("they pass: move them with `make lock`, run `make test`, commit constraints.txt")
    else:
        print("they FAIL the checks: keep the lock, read the failures above")
    width = max(len(p.name) for p in newest)
    print(f"\nstep 2:\n{'library':<{width}}  {'pyproject.toml':<22}  {'newest':<10}  verdict")
    for pin in newest:
        allowed = str(pin.requirement.specifier)
        print(f"{pin.name:<{width}}  {allowed:<22}  {pin.newest!s:<10}  {pin.verdict(passed)}")
    print("\nthe checks " + ("pass" if passed else "FAIL") + " on the newest releases")
    print("not run here: the tests that run `make run` (they use the checkout's .venv); run")
    print("them with `make test` after moving the lock or widening a pin")
    sys.exit(0 if passed and lock_passed else 1)


if __name__ == "__main__":
    main()
