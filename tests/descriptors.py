"""Every descriptor number below 1024 in use, so that the next one a test opens is past it:
where `select()` refuses descriptors (FD_SETSIZE), as in a daemon holding thousands of
control connections (`[access] max_connections` 4096 under `LimitNOFILE=16384`)."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
from collections.abc import Iterator

SELECT_LIMIT = 1024  # FD_SETSIZE: select() refuses this descriptor number and every higher one


def open_descriptors(pid: int | str = "self") -> dict[int, str]:
    """A process's open descriptors and what each is open on (its /proc link: a path, or
    `socket:[inode]`), as /proc lists them."""
    fd_dir = f"/proc/{pid}/fd"
    links = {}
    for name in os.listdir(fd_dir):
        with contextlib.suppress(FileNotFoundError):  # closed while listed
            links[int(name)] = os.readlink(f"{fd_dir}/{name}")
    return links


def descriptors_on(path: str, pid: int | str = "self") -> list[int]:
    """The descriptors a process has open on `path` (a device's port, say), lowest first."""
    target = os.path.realpath(path)
    return sorted(fd for fd, link in open_descriptors(pid).items() if link == target)


class LowDescriptors:
    """Holds every free descriptor number below 1024; `take()` takes again any that came
    free since (an earlier test's object collected meanwhile closes its socket)."""

    def __init__(self) -> None:
        self.taken: list[int] = []

    def take(self) -> None:
        while True:
            fd = os.open(os.devnull, os.O_RDONLY)
            if fd >= SELECT_LIMIT:
                os.close(fd)
                return
            self.taken.append(fd)


@contextlib.contextmanager
def low_descriptors_taken() -> Iterator[LowDescriptors]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 4 * SELECT_LIMIT:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4 * SELECT_LIMIT, hard), hard))
    gc.collect()  # what an earlier test left for the collector closes now, not in the test
    low = LowDescriptors()
    try:
        low.take()
        yield low
    finally:
        for fd in low.taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
