"""The core stays sans-I/O: no clocks, sleeps, sockets, threads or drivers in it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "firmware_bridge"
CORE = ["crc.py", "cobs.py", "frame.py", "messages.py", "link.py", "errors.py", "impairment.py"]
FORBIDDEN = {"time", "asyncio", "socket", "threading", "serial", "serial_asyncio_fast", "usb",
             "os", "select"}


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_no_io(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN, imported & FORBIDDEN


def test_importing_the_core_loads_no_transport_library() -> None:
    code = ("import sys, firmware_bridge.link, firmware_bridge.impairment; "
            "print(sorted(m for m in ('serial', 'usb', 'serial_asyncio_fast') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]"
