"""The display service as its own process beside a simulated table's daemon.

`python -m hil.run` and the browser tests start it exactly as systemd would
(`python -m controller.display`), on a free local port, and can restart it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

DISPLAY_READY_TIMEOUT_S = 30.0  # a cold start on a loaded CI machine; ~0.5 s normally
POLL_INTERVAL_S = 0.05


class DisplayProcess:
    """`async with DisplayProcess(config, socket, workdir) as display: display.url(...)`."""

    def __init__(self, config: Path, control_socket: str, workdir: Path, *,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = Path(config)
        self.control_socket = control_socket
        self.workdir = Path(workdir)
        self.host = host
        self.port = port  # 0: a free port, chosen at the first start and kept on restarts
        self.port_file = self.workdir / "display.port"
        self.log_path = self.workdir / "tabledisplay.log"
        self.process: asyncio.subprocess.Process | None = None

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def __aenter__(self) -> DisplayProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self.port_file.unlink(missing_ok=True)
        args = [sys.executable, "-m", "controller.display", "--config", str(self.config),
                "--socket", self.control_socket, "--listen", f"{self.host}:{self.port}",
                "--port-file", str(self.port_file)]
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.process = await asyncio.create_subprocess_exec(
            *args, stdout=log_file, stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log_file.close()
        deadline = asyncio.get_running_loop().time() + DISPLAY_READY_TIMEOUT_S
        while not self.port_file.exists():
            if self.process.returncode is not None:
                raise RuntimeError(f"tabledisplay exited with {self.process.returncode}; see "
                                   f"{self.log_path}:\n{self.log_path.read_text()[-2000:]}")
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"tabledisplay did not start listening within "
                                   f"{DISPLAY_READY_TIMEOUT_S:g} s; see {self.log_path}")
            await asyncio.sleep(POLL_INTERVAL_S)
        self.port = int(self.port_file.read_text())

    async def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(sig)
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    async def restart(self, sig: int = signal.SIGKILL) -> None:
        """Kill (a crash, by default) and start again on the same port."""
        await self.stop(sig)
        await self.start()
