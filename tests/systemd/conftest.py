"""Fixtures: a real AF_UNIX datagram socket standing in for systemd's notification socket."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass
class NotifySocket:
    """The receiving end: `env` is what systemd would export to the service."""

    sock: socket.socket
    env: dict[str, str]

    def recv_now(self) -> bytes | None:
        """The next queued datagram, or None if nothing is queued."""
        try:
            return self.sock.recv(65536)
        except BlockingIOError:
            return None

    def drain(self) -> list[bytes]:
        out = []
        while (data := self.recv_now()) is not None:
            out.append(data)
        return out

    async def recv(self, timeout: float = 2.0) -> bytes:
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.sock_recv(self.sock, 65536), timeout)


def _receiver() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    return sock


@pytest.fixture
def path_notify_socket() -> Iterator[NotifySocket]:
    # A short private directory: sun_path holds only 107 bytes, and pytest's
    # tmp_path can be longer than that.
    with tempfile.TemporaryDirectory(prefix="sdn-") as directory:
        path = os.path.join(directory, "notify")
        sock = _receiver()
        sock.bind(path)
        try:
            yield NotifySocket(sock, {"NOTIFY_SOCKET": path})
        finally:
            sock.close()


@pytest.fixture
def abstract_notify_socket() -> Iterator[NotifySocket]:
    name = f"tabled-test-{uuid.uuid4().hex}"
    sock = _receiver()
    sock.bind("\0" + name)
    try:
        yield NotifySocket(sock, {"NOTIFY_SOCKET": "@" + name})
    finally:
        sock.close()


@pytest.fixture(params=["path", "abstract"])
def notify_socket(request: pytest.FixtureRequest) -> NotifySocket:
    fixture = "path_notify_socket" if request.param == "path" else "abstract_notify_socket"
    return request.getfixturevalue(fixture)
