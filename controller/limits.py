"""The daemon's own limits, checked at start: its open files against its connections.

Every control connection is a file descriptor, and so is everything the table needs
to keep dealing: the store (database, WAL, shared memory, the critical-memory files),
each device's port (and a second one while a replugged device is reopened), the
event loop's own descriptors, a verify child's pipes. If the connections may take
them all, a flood of idle clients starves the shoe: its reopen fails with EMFILE and
no round is dealt. So at start the daemon compares its open-files limit (the soft
RLIMIT_NOFILE: `LimitNOFILE=` in tabled.service, `ulimit -n` elsewhere) with what it
may need, and either keeps `[access] max_connections`, lowers it to fit (one log line
naming the limit), or refuses to start (exit 6, one line) when too little is left.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

from controller.control import ACCEPT_BURST, ACCEPT_TURNS, TRUSTED_RESERVE

FD_BASE_RESERVE = 64
"""Descriptors the daemon holds besides its devices and connections: standard streams, the
loop's epoll and wake-up pipe, the signal pipe, the store's database, WAL and shared memory
and a second connection for checks, the critical-memory key and anchor, the sd_notify
socket, a verify child's pipes. A simulated table at rest holds 19, two of them the
harness's connections."""
FD_PER_DEVICE = 8  # a serial port or USB handle, a reopen beside it, a pin bridge socket
MIN_CONNECTIONS = 16  # below this a table cannot run a dealer, a display and a technician


@dataclass(frozen=True)
class ConnectionBudget:
    cap: int  # the connection cap to run with
    line: str  # "" if the configured cap fits; else why it was lowered or start refused
    refused: bool = False


def open_files_limit() -> int | None:
    """The soft RLIMIT_NOFILE, or None if unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def connection_budget(max_connections: int, devices: int, open_files: int | None) -> ConnectionBudget:
    """The connection cap that fits `open_files` descriptors beside `devices` devices."""
    reserve = (TRUSTED_RESERVE + ACCEPT_BURST * ACCEPT_TURNS + FD_BASE_RESERVE
               + FD_PER_DEVICE * devices)
    if open_files is None or max_connections + reserve <= open_files:
        return ConnectionBudget(max_connections, "")
    cap = open_files - reserve
    where = (f"the open-files limit is {open_files} (RLIMIT_NOFILE: LimitNOFILE= in "
             f"tabled.service, ulimit -n elsewhere); {reserve} are kept for the store, "
             f"{devices} devices, root's reserve and accepting")
    if cap < MIN_CONNECTIONS:
        return ConnectionBudget(0, f"{where}, which leaves {max(cap, 0)} control connections; "
                                   f"allowed: an open-files limit of at least "
                                   f"{reserve + MIN_CONNECTIONS}", refused=True)
    return ConnectionBudget(cap, f"control connections capped at {cap}, not [access] "
                                 f"max_connections = {max_connections}: {where}; for "
                                 f"{max_connections}, raise it to {max_connections + reserve}")
