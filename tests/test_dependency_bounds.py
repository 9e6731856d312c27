"""pyproject.toml's lower bounds admit no version the project cannot use (docs/dependencies.md).

A bound below what the tree needs passes wherever pip picks the newest release and fails
only on a machine with an older one already installed or pinned, as an error far from its
cause: setuptools 76 refuses `license = "Apache-2.0"`, pytest-asyncio 0.23 the
`loop_scope` argument.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_build_backend_reads_the_license_as_an_spdx_expression() -> None:
    """PEP 639's `license = "<SPDX expression>"` is read from setuptools 77 on."""
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["build-system"]["requires"] == ["setuptools>=77"]


def test_pytest_asyncio_is_one_that_knows_loop_scope() -> None:
    """`loop_scope` (mark and fixture) and asyncio_default_fixture_loop_scope: 0.24 on."""
    users = sorted(str(path.relative_to(ROOT)) for folder in ("tests", "hil")
                   for path in (ROOT / folder).rglob("*.py")
                   if re.search(r"loop_scope=", path.read_text(encoding="utf-8"))
                   and path.name != Path(__file__).name)
    assert users == ["hil/test_pit_browser.py", "hil/test_practice_drills.py",
                     "hil/test_practice_service_drills.py", "hil/test_scoreboard_browser.py",
                     "tests/cli/test_terminal_80_columns.py"]
    assert "asyncio_default_fixture_loop_scope" in PYPROJECT["tool"]["pytest"]["ini_options"]
    assert [r for r in PYPROJECT["project"]["optional-dependencies"]["test"]
            if r.startswith("pytest-asyncio")] == ["pytest-asyncio>=0.24"]
