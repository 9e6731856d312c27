"""Simulator threads carry their names down to the operating system.

Linux shows a thread by the name set with prctl(PR_SET_NAME) (top -H,
/proc/PID/task/TID/comm); Python 3.11 does not set it. The simulators run some
threads inside the daemon's process (the USB shuffler backend, the GPIO pin
bridge), and bench/bench_daemon.py tells their CPU from the daemon's own by
these names, all beginning with SIMULATOR_THREAD_PREFIX.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Any

SIMULATOR_THREAD_PREFIX = "sim-"
_PR_SET_NAME = 15
_TASK_COMM_LEN = 15  # the kernel keeps 15 bytes of a thread's name


def set_os_thread_name(name: str) -> None:
    """Name the calling thread for the OS; a no-op where prctl is not available."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        libc.prctl(_PR_SET_NAME, name.encode()[:_TASK_COMM_LEN], 0, 0, 0)
    except (OSError, AttributeError):
        return


def os_named(name: str, target: Callable[..., Any]) -> Callable[..., Any]:
    """``target`` wrapped to name its thread first (pass it as a Thread's target)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        set_os_thread_name(name)
        return target(*args, **kwargs)

    return run
