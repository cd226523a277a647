"""The docs' screenshots of the Events page: the script that takes them works, and the
committed ones were taken of the page's current code (`docs/screenshots/take.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.browser import CHROMEDRIVER, CHROMIUM
from tests.faults.png import colours
from tests.processes import ROOT
from workers.ops.events_page.chart import COLORS

SCRIPT = ROOT / "docs" / "screenshots" / "take.py"
sys.path.insert(0, str(SCRIPT.parent))

from take import SHOTS, page_digest  # noqa: E402


def _rgb(value: str) -> tuple[int, int, int]:
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def test_the_committed_screenshots_were_taken_of_the_current_page() -> None:
    taken = (SCRIPT.parent / "SOURCE").read_text().strip()
    assert taken == page_digest(), (
        "the Events page's code changed since docs/screenshots/ were taken: "
        "run `make screenshots` and commit them"
    )


def test_the_docs_show_every_screenshot() -> None:
    docs = (ROOT / "docs" / "operations.md").read_text()
    for name in SHOTS:
        assert f"(screenshots/{name})" in docs, name
        assert (SCRIPT.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


@pytest.mark.timeout(240)
def test_the_script_photographs_the_list_both_charts_and_a_dead_letter(tmp_path: Path) -> None:
    if not (CHROMIUM and CHROMEDRIVER):
        reason = "chromium and chromedriver are needed: apt-get install chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "SOURCE").read_text().strip() == page_digest()
    for name in SHOTS:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    fresh = colours((tmp_path / "events-chart-fresh.png").read_bytes())
    day = colours((tmp_path / "events-chart-day.png").read_bytes())
    # The fresh stack's dead letters and the synthetic day's outage are both drawn.
    for found in (fresh, day):
        assert found[_rgb(COLORS["accepted"])] > 0 and found[_rgb(COLORS["dead"])] > 0
    # A day draws many more bars than a few minutes.
    assert day[_rgb(COLORS["accepted"])] > 5 * fresh[_rgb(COLORS["accepted"])]
