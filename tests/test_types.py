"""The type checker runs in the suite: strict on the packages pyproject's [tool.mypy] lists.

cards, firmware_bridge, drivers and controller/rules are checked with `strict = true`
(every function typed, no implicit Any from generics, no unused `type: ignore`).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_scope_is_the_layers_below_the_controller() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["strict"] is True
    assert set(config["files"]) >= {"cards", "firmware_bridge", "drivers", "controller/rules"}


def test_mypy_passes() -> None:
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
