"""Test-only crash points: the daemon SIGKILLs itself inside a store commit.

A power cut from outside (the HIL harness's SIGKILL) almost never lands inside a
transaction: the daemon spends most of its time waiting. With ``TABLE_CRASH_IN_COMMIT``
set to ``probability[:seed]`` the daemon kills itself just before a ``COMMIT`` runs,
with that probability per commit: the step's rows are written inside the transaction,
its commit is not, so the restart must find the step entirely absent. Unset (the
service never sets it) nothing is installed and nothing is checked.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3

CRASH_ENV = "TABLE_CRASH_IN_COMMIT"
MARK = b"crash point: SIGKILL between the transaction's writes and its COMMIT\n"


def parse(spec: str) -> tuple[float, int | None]:
    """``"0.002"`` or ``"0.002:1234"`` -> (probability, seed)."""
    text, _, seed = spec.partition(":")
    try:
        probability = float(text)
        seed_value = int(seed) if seed else None
    except ValueError:
        raise ValueError(f"{CRASH_ENV} = {spec!r}: expected 'probability[:seed]', "
                         "e.g. 0.002:1234") from None
    if not 0 < probability <= 1:
        raise ValueError(f"{CRASH_ENV} = {spec!r}: the probability must be in (0, 1]")
    return probability, seed_value


def install(db: sqlite3.Connection, spec: str | None = None) -> bool:
    """Arm the crash point on ``db`` if the environment asks for it; True if armed."""
    spec = os.environ.get(CRASH_ENV, "") if spec is None else spec
    if not spec:
        return False
    probability, seed = parse(spec)
    # Each start draws its own sequence: the seed and the store's commit counter (every
    # start commits before the crash point is armed, so the counter differs from the last
    # start's). One sequence for all starts would kill each start at the same commit, and a
    # kill that came before any progress would then come at every start, for ever.
    rng = random.Random(seed if seed is None else f"{seed}:{_commit_no(db)}")

    def before_statement(statement: str) -> None:
        if statement.lstrip().upper().startswith("COMMIT") and rng.random() < probability:
            os.write(2, MARK)
            os.kill(os.getpid(), signal.SIGKILL)

    db.set_trace_callback(before_statement)
    return True


def _commit_no(db: sqlite3.Connection) -> int | None:
    """The store's commit counter (critical memory's seal), or None outside a table store."""
    try:
        row = db.execute("SELECT commit_no FROM critical_seal").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else int(row[0])
