"""Test-only seams of a linked progressive's link (605a.8), for the pit campaign
(hil/pit_campaign.py), as `controller.crash_points` is for the power-cut campaign.

Each is read from the daemon's environment when the link is built. Unset (the service
never sets them) nothing is installed and the production path is the one it always was:
tests/progressive/test_link_seams.py asserts it.

- ``TABLE_LINKED_CLAIM_GATE`` = ``key:seat``: a linked hit at ``seat`` is held just before
  its claim's transaction, in a transaction of its own on the link's connection, until it
  gets PostgreSQL's advisory lock ``key`` in shared mode. The harness holds that lock
  exclusively while a pair of tables deals its forced hit and lets go once both tables'
  claims wait on it: PostgreSQL wakes both waiters at the same release, so the two claims'
  transactions start together and race on the level's row lock (the race 605a.8's "hits
  are ordered and each is paid once" is about), instead of arriving as far apart as two
  daemons happen to deal. A gate never released lets the claim go after
  ``GATE_TIMEOUT_S`` as a link down (the hit is recorded and claimed by the next sync).
- ``TABLE_LINKED_SYNC_HOLD`` = ``path``: while ``path`` exists the link's catch-up sends no
  outbox row (it still reconnects, reads the meters and claims hits recorded while the link
  was down, so a link that comes back is up again), and the contributions of a lock-out stay
  in the table's outbox: a table killed then dies with them unsent, every time (the
  restarted daemon sends them once the harness removes ``path``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLAIM_GATE_ENV = "TABLE_LINKED_CLAIM_GATE"
SYNC_HOLD_ENV = "TABLE_LINKED_SYNC_HOLD"
# Longer than a pair's two tables take to deal their forced rounds on a busy machine (about a
# second), short enough that a harness that died holding the lock stalls a table briefly.
GATE_TIMEOUT_S = 60


@dataclass(frozen=True, slots=True)
class ClaimGate:
    key: int
    seat: int

    def holds(self, seat: int) -> bool:
        return seat == self.seat

    def wait(self, conn: Any) -> None:
        """Inside a transaction of its own: blocks until the harness lets go of the lock (the
        shared lock is released at this transaction's end, just before the claim's)."""
        conn.execute(f"SET LOCAL statement_timeout = {GATE_TIMEOUT_S * 1000}")
        conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (self.key,))


@dataclass(frozen=True, slots=True)
class SyncHold:
    path: Path

    def holding(self) -> bool:
        return self.path.exists()


def claim_gate() -> ClaimGate | None:
    """The gate the environment asks for, or None (always, in service)."""
    spec = os.environ.get(CLAIM_GATE_ENV, "")
    if not spec:
        return None
    key, _, seat = spec.partition(":")
    try:
        gate = ClaimGate(int(key), int(seat))
    except ValueError:
        raise ValueError(f"{CLAIM_GATE_ENV} = {spec!r}: expected 'key:seat' (an advisory lock "
                         "key and a seat number), e.g. 3001:5") from None
    if not 0 < gate.key < 2**31 or gate.seat < 1:
        raise ValueError(f"{CLAIM_GATE_ENV} = {spec!r}: the key must be in 1 to 2147483647 and "
                         "the seat 1 or more")
    return gate


def sync_hold() -> SyncHold | None:
    """The hold the environment asks for, or None (always, in service)."""
    spec = os.environ.get(SYNC_HOLD_ENV, "")
    return SyncHold(Path(spec)) if spec else None
