"""`make lock`: constraints.txt anew, from what pip resolves today within pyproject.toml's ranges.

A throwaway venv gets this checkout with every extra the Makefile installs (`test`, which
holds `testing`, `otel` and `sentry`, and `embedded-redis`), without the old constraints;
`pip freeze` of it, under the header that says what the file is, becomes constraints.txt.
Then run `make test`, and commit both.

    python tests/lock.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from throwaway_venv import ROOT, Venv, must_run

LOCK = ROOT / "constraints.txt"
EXTRAS = "test,embedded-redis"
HEADER = """\
# The exact versions `make install`, `make run` and `make test` install into .venv (pip's
# constraints file: `pip install -c constraints.txt`). pyproject.toml's ranges stay what a
# user of the distribution gets; this file makes the checkout's own environment the same on
# every machine, whatever a dependency releases within its range.
# Made by `make lock` (tests/lock.py): the newest releases pyproject.toml's ranges admit, with
# every extra the Makefile installs. `make test-newest` says which entries to move;
# tests/test_lock.py fails when an entry falls outside pyproject.toml's ranges.
"""


def resolve(venv: Venv) -> list[str]:
    """`name==version` of every distribution the venv holds but this checkout, pip and
    setuptools (`pip freeze` leaves those out)."""
    out = subprocess.run(
        [str(venv.python), "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted((line for line in out.splitlines() if "==" in line), key=str.lower)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Build the venv here, and keep it.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Venv(args.keep or Path(tmp))
        venv.create(reuse=False)
        must_run([*venv.pip, "-e", f"{ROOT}[{EXTRAS}]"], venv.log)
        pins = resolve(venv)
    old = {line for line in LOCK.read_text().splitlines() if "==" in line}
    LOCK.write_text(HEADER + "".join(f"{pin}\n" for pin in pins))
    moved = sorted(set(pins) - old, key=str.lower)
    print(f"{LOCK.name}: {len(pins)} entries, {len(moved)} changed")
    for pin in moved:
        print(f"  {pin}")
    print("now run `make test`, and commit constraints.txt with what it needed")


if __name__ == "__main__":
    main()
