"""Every descriptor number below 1024 in use, so that the next one a test opens is past it:
where `select()` refuses descriptors (FD_SETSIZE), as in a daemon holding thousands of
control connections (`[access] max_connections` 4096 under `LimitNOFILE=16384`)."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator

SELECT_LIMIT = 1024  # FD_SETSIZE: select() refuses this descriptor number and every higher one


@contextlib.contextmanager
def low_descriptors_taken() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 4 * SELECT_LIMIT:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4 * SELECT_LIMIT, hard), hard))
    taken: list[int] = []
    try:
        while not taken or taken[-1] < SELECT_LIMIT - 1:
            taken.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
