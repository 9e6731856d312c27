"""Settings for every test, the unit suite (tests/) and the HIL scenarios (hil/).

tablectl wraps its text to the terminal (80 columns when there is none): the tests
read its messages whole, on a terminal so wide that nothing wraps (tablectl run as a
process inherits it); the tests of wrapping set COLUMNS themselves.

No test leaves descriptors open behind it: a worker runs hundreds of test files one after
another, and one that left 2,000 sockets for the garbage collector pushed the next file's
MQTT connections past descriptor 1023, where paho's select() refuses them (the pit page's
test failed in one clean-clone run in two before stop 62 found why).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# After a test and its fixtures, at most this many descriptors open in the test process: the
# most any test left in stop 62's count was 90 (a module's Chromium and broker included).
DESCRIPTORS_LEFT_AT_MOST = 256


@pytest.fixture(autouse=True)
def _tablectl_unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture(autouse=True)
def _no_descriptors_left_behind() -> Iterator[None]:
    """Set up first, so torn down last: after every other fixture of the test has closed."""
    yield
    left = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    assert left <= DESCRIPTORS_LEFT_AT_MOST, (
        f"{left} descriptors are open after this test (at most {DESCRIPTORS_LEFT_AT_MOST}): "
        "close what it opened (a StreamWriter, a socket, a file) before it ends")


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
