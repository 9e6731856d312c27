"""The type checker runs in the suite: strict on the packages pyproject's [tool.mypy] lists.

cards, firmware_bridge, drivers and all of controller are checked with `strict = true`
(every function typed, no implicit Any from generics, no unused `type: ignore`).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_scope_is_the_controller_and_the_layers_below_it() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["strict"] is True
    assert set(config["files"]) >= {"cards", "firmware_bridge", "drivers", "controller"}
    # No module of controller/ is let off the strict check.
    assert not [o for o in config.get("overrides", [])
                if any(str(m).startswith("controller") for m in
                       ([o["module"]] if isinstance(o["module"], str) else o["module"]))]


def test_mypy_passes() -> None:
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
