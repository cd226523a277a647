"""What `make test-newest` and `make test-oldest` share: a throwaway venv with this checkout
and its test extras, and the pinning and end-to-end tests run there.

Both scripts run as `python tests/NAME.py`, so this module is imported from tests/ itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def runs_make(path: Path) -> bool:
    """A test file with tests that run `make run` in a checkout (the DEVSTACK group): their
    processes run from the checkout's own .venv (the pinned versions), not from here."""
    return "xdist_group(DEVSTACK)" in path.read_text()


def pinning_tests() -> list[str]:
    """Every test file docs/internals.md names as pinning an internal, but those that run
    `make` (their processes would not run the throwaway venv's versions)."""
    named = set(re.findall(r"\b(test_[a-z0-9_]+\.py)", (ROOT / "docs/internals.md").read_text()))
    paths = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if path.name in named
    )
    missing = named - {Path(p).name for p in paths}
    if missing:
        sys.exit(f"docs/internals.md names tests that do not exist: {', '.join(sorted(missing))}")
    return [p for p in paths if not runs_make(ROOT / p)]


def run(command: list[str], log: Path, cwd: Path | None = None) -> bool:
    """Runs a command with its output appended to the log; whether it succeeded."""
    with log.open("a") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False, cwd=cwd)
    return done.returncode == 0


def must_run(command: list[str], log: Path) -> None:
    if not run(command, log):
        sys.exit(f"failed: {' '.join(command)} (see {log})")


@dataclass(frozen=True, slots=True)
class Venv:
    """A venv in `where`, pip's output in `where/pip.log`."""

    where: Path

    @property
    def python(self) -> Path:
        return self.where / "venv" / "bin" / "python"

    @property
    def log(self) -> Path:
        return self.where / "pip.log"

    @property
    def pip(self) -> list[str]:
        return [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]

    def create(self, reuse: bool) -> bool:
        """A new venv with an up-to-date pip; False when `reuse` finds one already there."""
        if reuse and self.python.exists():
            print(f"the venv {self.python.parent.parent} kept from an earlier run ...", flush=True)
            return False
        print(f"a throwaway venv in {self.where / 'venv'}, pip's output in {self.log} ...")
        sys.stdout.flush()
        self.where.mkdir(parents=True, exist_ok=True)
        must_run([sys.executable, "-m", "venv", str(self.where / "venv")], self.log)
        must_run([*self.pip, "--upgrade", "pip"], self.log)
        return True

    def installed(self, name: str) -> Version:
        out = subprocess.run(
            [str(self.python), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return Version(out.strip())

    def distributions(self) -> dict[str, Version]:
        """Every distribution installed, by canonical name."""
        out = subprocess.run(
            [str(self.python), "-m", "pip", "list", "--format=json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return {canonicalize_name(d["name"]): Version(d["version"]) for d in json.loads(out)}

    def run_tests(self, tests: list[str], pytest_args: str) -> bool:
        """The given test files and the end-to-end tests (but those that run `make`), three at
        a time as `make test` runs them; whether they passed."""
        e2e = subprocess.run(
            [str(self.python), "-m", "pytest", "-q", "--collect-only", "-m", "e2e", "tests"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        e2e_files = {line.split("::")[0] for line in e2e.stdout.splitlines() if "::" in line}
        command = [str(self.python), "-m", "pytest", "-n", "4", "--dist", "loadgroup", "-q"]
        command += [*tests, *pytest_args.split()]
        command += sorted(f for f in e2e_files if f not in tests and not runs_make(ROOT / f))
        return subprocess.run(command, cwd=ROOT, check=False).returncode == 0
