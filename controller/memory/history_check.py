"""The check of the whole history at every start, as a result the daemon records.

Every log entry's MAC from the first, every sealed row (settled rounds too), the seal and
the anchor, on a snapshot of its own while the devices connect. The start itself checked
the seal, the anchor, the log's head and a bounded stretch of recent entries, so that
ready does not wait on the history's length; until this passes the daemon lets no device
event reach the table and runs no command that opens it or moves money.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.errors import CommandError


@dataclass(frozen=True)
class HistoryCheck:
    """`status` is what `tablectl status` shows as history_check; `hold` is, when the check
    could not run at all, why the table must be held out of order (a check that ran and
    failed has already put it there)."""

    status: Mapping[str, Any]
    hold: str = ""
    error: BaseException | None = field(default=None, compare=False)
    passed: bool = False


async def check_history(verify_full: Callable[[], Awaitable[Mapping[str, Any]]]
                        ) -> HistoryCheck:
    """`verify_full` is the daemon's full check (the same as `tablectl events verify
    --full`): it raises a CommandError naming the failure, after holding the table."""
    started = time.monotonic()
    try:
        verified = await verify_full()
    except CommandError as exc:
        return HistoryCheck({"state": "failed", "detail": str(exc)})
    except Exception as exc:  # the check could not run: say so, hold the table
        return HistoryCheck({"state": "failed", "detail": repr(exc)},
                            hold=f"history check: could not run ({exc!r})", error=exc)
    return HistoryCheck({"state": "passed", "entries": verified["entries"],
                         "seconds": round(time.monotonic() - started, 3)}, passed=True)
