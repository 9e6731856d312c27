"""Settings for every test, the unit suite (tests/) and the HIL scenarios (hil/).

tablectl wraps its text to the terminal (80 columns when there is none): the tests
read its messages whole, on a terminal so wide that nothing wraps (tablectl run as a
process inherits it); the tests of wrapping set COLUMNS themselves.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _tablectl_unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")


# The files that take longest, started first: `./run-tests` hands whole files to its
# workers in collection order (pytest-xdist's --dist loadfile with --no-loadscope-reorder;
# without it xdist hands out the files with the most tests first, and these few-test files
# started last), and one of these started last kept the other workers idle for its whole
# run.
LONGEST_FIRST = ("tests/test_release.py", "hil/test_pit.py",
                 "tests/cli/test_terminal_80_columns.py", "hil/test_soak.py",
                 "hil/test_power_cuts.py", "hil/test_power_cut_unflushed.py",
                 "hil/test_witness_hil.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    root = config.rootpath
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(),
                                         len(LONGEST_FIRST)))
