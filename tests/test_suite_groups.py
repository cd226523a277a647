"""The suite's own scheduling: `make test` runs `pytest -n 4 --dist loadgroup`, and the tests
marked `xdist_group` must share one worker (the `make run` tests hold a machine-wide lock on
ports 8000-8002: spread over the workers, they sit waiting on it, minutes each).

pytest-xdist names a group by appending `@group` to each test's `_nodeid`; pytest 9.2 keeps
node ids elsewhere, so on pytest 9.2 with pytest-xdist 3.8 the groups silently vanish (every
test still passes, the suite just takes longer). This runs a small suite the way `make test`
does and reads which worker ran each grouped test.
"""

from __future__ import annotations

import os

import pytest

GROUPED = """
import os
import pytest

@pytest.mark.parametrize("n", range(6))
@pytest.mark.xdist_group("together")
def test_grouped(n, tmp_path_factory):
    out = tmp_path_factory.getbasetemp().parent / f"ran-{n}"
    out.write_text(os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.parametrize("n", range(6))
def test_loose(n):
    pass
"""


def test_tests_of_one_xdist_group_run_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in os.environ:
        if name.startswith("COVERAGE_"):
            monkeypatch.delenv(
                name
            )  # four interpreters of pytest alone: nothing of ours to measure
    pytester.makepyfile(test_grouped=GROUPED)
    result = pytester.runpytest_subprocess("-n", "3", "--dist", "loadgroup", "-p", "xdist")
    result.assert_outcomes(passed=12)
    ran = sorted(pytester.path.parent.glob("**/ran-*"))
    workers = {path.read_text() for path in ran}
    assert len(ran) == 6 and len(workers) == 1, {path.name: path.read_text() for path in ran}
