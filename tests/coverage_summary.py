"""The coverage figure `make test` prints after the suite: total, lines and branches over
`app/`, `workers/` and `pytest_webhook_receiver/`, every process the suite started counted
(pyproject.toml's [tool.coverage.run]), and the files below the bar, least covered first.

Run after `coverage combine`, with COVERAGE_FILE naming the combined data. Fails when the
total falls below FLOOR: a drop of more than a point or so means tests stopped reaching code
(a process no longer measured, a test silently doing less), which the pass count hides.

    python tests/coverage_summary.py [--html DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import coverage

# Set a little under the figure docs/internals.md states (a killed process's lines are lost
# with it, so the total moves by a few tenths between runs).
FLOOR = 96.0
# Files under this are listed by name after the total.
BAR = 85.0
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Figure:
    lines: int
    lines_covered: int
    branches: int
    branches_covered: int

    @classmethod
    def of(cls, summary: dict[str, int]) -> Figure:
        return cls(
            summary["num_statements"],
            summary["covered_lines"],
            summary["num_branches"],
            summary["covered_branches"],
        )

    @property
    def total(self) -> float:
        """coverage.py's own percentage: lines and branches counted together."""
        reached, measured = self.lines_covered + self.branches_covered, self.lines + self.branches
        return 100.0 * reached / measured if measured else 100.0  # an empty __init__.py

    def __str__(self) -> str:
        def part(covered: int, of: int) -> str:
            return f"{100.0 * covered / max(1, of):.1f}% ({covered:,}/{of:,})"

        return (
            f"{self.total:.1f}%: lines {part(self.lines_covered, self.lines)}, "
            f"branches {part(self.branches_covered, self.branches)}"
        )


def measure(cov: coverage.Coverage) -> tuple[Figure, dict[str, Figure]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "coverage.json"
        cov.json_report(outfile=str(out))
        report = json.loads(out.read_text())
    files = {name: Figure.of(data["summary"]) for name, data in report["files"].items()}
    return Figure.of(report["totals"]), files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, help="Also write the HTML report here.")
    args = parser.parse_args()
    cov = coverage.Coverage(config_file=str(ROOT / "pyproject.toml"))
    cov.load()
    total, files = measure(cov)
    print(f"coverage of app/, workers/, pytest_webhook_receiver/: {total}")
    low = sorted((f.total, name) for name, f in files.items() if f.total < BAR)
    for _, name in low:
        print(f"  {name}: {files[name]}")
    if args.html:
        cov.html_report(directory=str(args.html))
        print(f"  the report: {args.html / 'index.html'}")
    if total.total < FLOOR:
        sys.exit(f"coverage {total.total:.1f}% is below the floor, {FLOOR}% (coverage_summary.py)")


if __name__ == "__main__":
    main()
