"""Generated documents stay in step with what generates them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_compliance_matrix_matches_the_tests_citations():
    result = subprocess.run([sys.executable, "tools/compliance.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, ("docs/compliance.md is stale: run "
                                    ".venv/bin/python tools/compliance.py\n" + result.stdout
                                    + result.stderr)
