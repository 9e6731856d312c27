"""Generated documents stay in step with what generates them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REGS = ROOT.parent / "shared" / "regs"  # the regulations, beside the checkout (as in CI)


def test_compliance_matrix_matches_the_tests_citations():
    if not REGS.is_dir():
        message = f"the regulations are not beside the checkout ({REGS}); tools/compliance.py reads them"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    result = subprocess.run([sys.executable, "tools/compliance.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, ("docs/compliance.md is stale: run "
                                    ".venv/bin/python tools/compliance.py\n" + result.stdout
                                    + result.stderr)
