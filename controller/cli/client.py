"""Connecting tablectl to tabled's control socket, with errors a technician can act on.

A technician at a dead table needs to know *which* of these it is, because each has a
different fix: the socket file is missing (the daemon is not running, or --socket
points elsewhere), the file is there but their account may not open it (group
membership), or the file is there but nobody is listening (the daemon crashed and
left it behind).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Mapping
from typing import Any

from controller.control import ControlClient, ControlError
from controller.control_client import NotAControlSocket
from controller.errors import LinkError

DEFAULT_SOCKET = "/run/tabled/control.sock"
SOCKET_ENV = "TABLECTL_SOCKET"
SERVICE_HINT = ("Check the service:  systemctl status tabled\n"
                "Recent daemon log:  journalctl -u tabled -n 50")


def default_socket() -> str:
    """The socket tablectl uses without --socket: $TABLECTL_SOCKET, else the systemd path."""
    return os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET


class DaemonUnavailable(LinkError):
    """tabled cannot be reached on its control socket; `reason` is one of
    missing, not_a_socket, not_tabled, permission_denied, refused, closed, error."""

    def __init__(self, path: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason

    def explain(self) -> str:
        """The full text for the technician: what is wrong and how to look further."""
        return f"tablectl: {self}\n{SERVICE_HINT}"


class UnsupportedCommand(LinkError):
    """The daemon answered 'unknown command': it is older than this tablectl."""

    def __init__(self, command: str, daemon_message: str) -> None:
        super().__init__(
            f"the daemon does not offer the '{command}' command (it is older than this "
            f"tablectl, or the feature is not installed at this table).\n"
            f"  daemon said: {daemon_message}")
        self.command = command


def _diagnose(path: str, exc: OSError) -> DaemonUnavailable:
    """Turn a failed connect into the most specific explanation the file system allows."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return DaemonUnavailable(path, "missing", (
            f"the daemon is not running: there is no control socket at {path}\n"
            f"  (if tabled uses another socket, pass --socket PATH or set {SOCKET_ENV})"))
    except PermissionError:
        return DaemonUnavailable(path, "permission_denied", (
            f"permission denied: cannot look up the control socket {path}\n"
            "  (your account may not enter its directory; run as a member of the tabled group)"))
    if not stat.S_ISSOCK(st.st_mode):
        return DaemonUnavailable(path, "not_a_socket", (
            f"{path} exists but is not a socket, so it is not tabled's control socket\n"
            "  (check --socket / the [control] socket setting)"))
    if isinstance(exc, PermissionError):
        return DaemonUnavailable(path, "permission_denied", (
            f"permission denied: the control socket {path} exists (mode "
            f"{stat.S_IMODE(st.st_mode):04o}) but your account may not open it\n"
            "  (add the account to the tabled group, log in again, or use sudo)"))
    if isinstance(exc, ConnectionRefusedError):
        return DaemonUnavailable(path, "refused", (
            f"the daemon is not running: the control socket {path} exists but nobody is "
            "listening (connection refused; tabled stopped or crashed and left the file)"))
    return DaemonUnavailable(path, "error", f"cannot connect to the control socket {path}: {exc}")


class Daemon:
    """One control connection to tabled: `async with Daemon(path) as d: await d.call(...)`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.client = ControlClient(path)

    async def __aenter__(self) -> Daemon:
        try:
            await self.client.connect()
        except OSError as exc:
            raise _diagnose(self.path, exc) from exc
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()

    async def call(self, cmd: str, auth: Mapping[str, str] | None = None, **args: Any) -> Any:
        """One request; ControlError for a refusal, UnsupportedCommand for an unknown command,
        DaemonUnavailable if the daemon goes away mid-request."""
        try:
            return await self.client.call(cmd, auth=auth, **args)
        except ControlError as exc:
            if exc.code == "bad_request" and str(exc).startswith(f"unknown command {cmd!r}"):
                raise UnsupportedCommand(cmd, str(exc)) from exc
            raise
        except NotAControlSocket as exc:
            raise DaemonUnavailable(self.path, "not_tabled", (
                f"{self.path} is not tabled's control socket: {exc}\n"
                "  (check --socket / the [control] socket setting)")) from exc
        except (ConnectionError, OSError) as exc:
            raise DaemonUnavailable(self.path, "closed", (
                f"the daemon closed the control connection on {self.path} during '{cmd}' "
                "(it may be restarting)")) from exc

    async def subscribe(self, after_seq: int = 0) -> Any:
        """The event stream from `after_seq` on (an async iterator of event dicts)."""
        return self.client.subscribe(after_seq)


class EventFeed:
    """Events committed after `after_seq`, on a connection of their own.

    A background task pumps the stream into a queue, so waiting for the next event with
    a timeout never cancels a read inside the stream itself (which would end it).
    """

    def __init__(self, path: str, after_seq: int) -> None:
        self.path = path
        self.after_seq = after_seq
        self.ended = False
        self._daemon = Daemon(path)
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> EventFeed:
        await self._daemon.__aenter__()
        self._task = asyncio.create_task(self._pump())
        return self

    async def _pump(self) -> None:
        try:
            async for event in await self._daemon.subscribe(self.after_seq):
                self._queue.put_nowait(event)
        except (ConnectionError, OSError, ValueError):
            pass  # the daemon went away: the feed ends, as when it closes the stream
        finally:
            self._queue.put_nowait(None)

    async def next(self, deadline: float) -> dict[str, Any] | None:
        """The next event before `deadline` (event-loop time); None when time is up or the
        stream has ended (then `ended` is True)."""
        if self.ended:
            return None
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return None
        try:
            item = await asyncio.wait_for(self._queue.get(), remaining)
        except TimeoutError:
            return None
        if item is None:
            self.ended = True
        return item

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._daemon.__aexit__()
