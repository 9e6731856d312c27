"""Install pip into a venv made with --without-pip, from PyPI's wheel, using only the stdlib.

Used when the system Python lacks ensurepip (Debian without python3-venv).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

INDEX = "https://pypi.org/pypi/pip/json"


def main() -> int:
    with urllib.request.urlopen(INDEX, timeout=60) as response:
        release = json.load(response)
        base = response.geturl()
    wheel = next(f for f in release["urls"] if f["filename"].endswith("-py3-none-any.whl"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / wheel["filename"]
        # Mirrors may answer with a URL relative to the JSON document.
        with urllib.request.urlopen(urllib.parse.urljoin(base, wheel["url"]),
                                    timeout=120) as response:
            data = response.read()
        if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
            print(f"error: {wheel['filename']} does not match its published sha256",
                  file=sys.stderr)
            return 1
        path.write_bytes(data)
        # A wheel is importable as a zip: run pip from it to install itself.
        return subprocess.call([sys.executable, f"{path}/pip", "install", "--quiet", str(path)])


if __name__ == "__main__":
    sys.exit(main())
