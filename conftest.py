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
