"""Run `tablectl` as its own process against a daemon, the way a technician would.

Shared by the CLI's end-to-end tests and tools/capture_cli_examples.py (which
records real output for docs/technician-guide.md).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLECTL_TIMEOUT_S = 90.0  # the longest guided test (a shuffle) takes well under this


async def run_tablectl(argv: Sequence[str], *, socket: str | None, stdin: str | None = None,
                       during: Callable[[], Awaitable[None]] | None = None, when: str = "",
                       env: Mapping[str, str] | None = None,
                       timeout: float = TABLECTL_TIMEOUT_S) -> tuple[int, str]:
    """Run `tablectl argv` (with `--socket`, unless it reads a store file or `socket` is
    None: the commands that need no daemon) and return (exit code, output). `during` runs
    once a line containing `when` has been printed: the technician acts on the prompt, not
    before."""
    real = [*argv] if "--store" in argv or socket is None else [*argv, "--socket", socket]
    environment = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("TABLECTL_SOCKET", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", *real, cwd=ROOT, env=environment,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    assert proc.stdin is not None and proc.stdout is not None
    if stdin:
        proc.stdin.write(stdin.encode())
    proc.stdin.close()
    lines: list[str] = []
    helper: asyncio.Future[None] | None = None

    async def read() -> None:
        nonlocal helper
        assert proc.stdout is not None
        async for raw in proc.stdout:
            lines.append(raw.decode(errors="replace"))
            if during is not None and helper is None and when in lines[-1]:
                helper = asyncio.ensure_future(during())

    await asyncio.wait_for(read(), timeout)
    await proc.wait()
    if helper is not None:
        await helper
    return (proc.returncode if proc.returncode is not None else -1), "".join(lines)
