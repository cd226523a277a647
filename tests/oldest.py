"""`make test-oldest`: the pinning and end-to-end tests on the floor of every requirement.

A floor pyproject.toml claims (`>=`) is a promise to whoever installs next to other
packages that hold a library down: it holds only if that version was run. This tests them:

1. the floors of the runtime requirements and of the extras a deployment adds (`testing`,
   `otel`, `sentry`), each its `>=` bound, become `name==floor` constraints;
2. a throwaway venv gets this checkout with its test extras under those constraints (pip
   has no lowest resolution of its own); if they do not resolve together, pip's account of
   the conflict is printed: a floor that cannot be installed is a floor to raise;
3. the pinning tests (every test file docs/internals.md names) and the end-to-end tests
   (marker `e2e`) run there, as `make test-newest` runs them on the newest releases;
4. a table says, per requirement, its floor, the version installed and the result.

The tools of the `test` extra (pytest-xdist, the providers' SDKs) are not floored: they are
not what an installation of the receiver runs.

    python tests/oldest.py [--keep DIR] [--pytest-args "..."]
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
from throwaway_venv import ROOT, Venv, pinning_tests, run

# The extras whose floors are claimed for a deployment (`test` is the suite's own tools).
FLOORED_EXTRAS = ("testing", "otel", "sentry")


@dataclass(frozen=True, slots=True)
class Floor:
    name: str
    requirement: Requirement
    floor: Version

    @property
    def constraint(self) -> str:
        return f"{self.name}=={self.floor}"


def floors() -> list[Floor]:
    """The `>=` bound of every runtime requirement and of the floored extras'."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in FLOORED_EXTRAS:
        lines += project["optional-dependencies"][extra]
    found: dict[str, Floor] = {}
    for line in lines:
        requirement = Requirement(line)
        bounds = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
        if not bounds:
            sys.exit(f"pyproject.toml: {line!r} claims no floor (>=)")
        name = requirement.name.lower()
        found.setdefault(name, Floor(name, requirement, max(bounds)))
    return list(found.values())


def conflict(log: Path) -> str:
    """pip's account of why the constraints do not resolve: from its `ResolutionImpossible`
    report, the lines that name the requirements in conflict."""
    text = log.read_text().splitlines()
    # The last report: a kept venv's log holds every run's.
    found = [i for i, line in enumerate(text) if "conflict is caused by" in line]
    if not found:
        return "\n".join(text[-15:])
    start = found[-1]
    kept = [text[start]]
    for line in text[start + 1 :]:
        if not line.strip():
            break
        kept.append(line)
    return "\n".join(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Build the venv here, and keep it.")
    parser.add_argument("--pytest-args", default="", help="Passed on to pytest.")
    args = parser.parse_args()
    wanted = floors()
    tests = pinning_tests()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Venv(args.keep or Path(tmp))
        constraints = venv.where / "floors.txt"
        venv.create(reuse=args.keep is not None)
        # Again on a kept venv: pip moves whatever is off the floors onto them.
        constraints.write_text("".join(f"{f.constraint}\n" for f in wanted))
        # Not quiet: pip names the requirements in conflict only at its normal verbosity.
        pip = [arg for arg in venv.pip if arg != "--quiet"]
        if not run([*pip, "-c", str(constraints), "-e", f"{ROOT}[test]"], venv.log):
            print(f"\nthe floors do not resolve together (see {venv.log}):")
            print(conflict(venv.log))
            sys.exit(1)
        got = {f.name: venv.installed(f.name) for f in wanted}
        print(f"running {len(tests)} pinning test files and the end-to-end tests ...", flush=True)
        passed = venv.run_tests(tests, args.pytest_args)
    width = max(len(f.name) for f in wanted)
    print(f"\n{'requirement':<{width}}  {'pyproject.toml':<16}  {'installed':<10}  result")
    for floor in wanted:
        claimed = str(floor.requirement.specifier)
        if got[floor.name] != floor.floor:
            result = f"NOT THE FLOOR: {got[floor.name]} installed"
        else:
            result = "pass" if passed else "FAIL"
        print(f"{floor.name:<{width}}  {claimed:<16}  {got[floor.name]!s:<10}  {result}")
    exact = all(got[f.name] == f.floor for f in wanted)
    print("\nthe pinning tests " + ("pass" if passed else "FAIL") + " on the floors")
    print("not run here: the tests that run `make run` (they use the checkout's .venv)")
    sys.exit(0 if passed and exact else 1)


if __name__ == "__main__":
    main()
