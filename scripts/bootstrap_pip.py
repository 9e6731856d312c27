"""Install pip into a venv made with --without-pip, from PyPI's wheel, using only the stdlib.

Used when the system Python lacks ensurepip (Debian without python3-venv).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

INDEX = "https://pypi.org/pypi/pip/json"


def main() -> int:
    with urllib.request.urlopen(INDEX, timeout=60) as response:
        release = json.load(response)
    wheel = next(f for f in release["urls"] if f["filename"].endswith("-py3-none-any.whl"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / wheel["filename"]
        with urllib.request.urlopen(wheel["url"], timeout=120) as response:
            path.write_bytes(response.read())
        # A wheel is importable as a zip: run pip from it to install itself.
        return subprocess.call([sys.executable, f"{path}/pip", "install", "--quiet", str(path)])


if __name__ == "__main__":
    sys.exit(main())
