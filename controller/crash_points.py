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
from collections.abc import Callable
from typing import Any

CRASH_ENV = "TABLE_CRASH_IN_COMMIT"
MARK = b"crash point: SIGKILL between the transaction's writes and its COMMIT\n"
CARD_CRASH_ENV = "TABLE_CRASH_AT_CARD"
"""``index:path``: the daemon kills itself at the end of the step that handles the shoe's
card ``index`` (the link writes that card's ACK after the step, so the shoe sends it again;
the cards before it, acknowledged and not yet flushed, are the window that protocol 1.2's
card commit acknowledgement closes): just before its COMMIT, or, for a step whose entries
wait in memory (docs/rulings.md C31), as its card's entry is given out, before any of it
is sent. Once: it first creates ``path``, and does nothing while ``path`` exists (the
restarted daemon must live)."""

_card_crash: tuple[int, str] | None = None  # (index, once-path), armed by install()
_kill_at_commit = False


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


def install(db: sqlite3.Connection, spec: str | None = None, *,
            listen: Callable[[Callable[[Any], None]], object] | None = None) -> bool:
    """Arm the crash point on ``db`` if the environment asks for it; True if armed.
    ``listen``: the store's `subscribe`, for a card's step that commits nothing."""
    global _card_crash
    card = os.environ.get(CARD_CRASH_ENV, "")
    if card:
        index, _, once = card.partition(":")
        if not (index.isdecimal() and once):
            raise ValueError(f"{CARD_CRASH_ENV} = {card!r}: expected 'index:path', e.g. 7:/tmp/once")
        _card_crash = (int(index), once)
    spec = os.environ.get(CRASH_ENV, "") if spec is None else spec
    if not spec and _card_crash is None:
        return False
    probability, seed = parse(spec) if spec else (0.0, None)
    # Each start draws its own sequence: the seed and the store's commit counter (every
    # start commits before the crash point is armed, so the counter differs from the last
    # start's). One sequence for all starts would kill each start at the same commit, and a
    # kill that came before any progress would then come at every start, for ever.
    rng = random.Random(seed if seed is None else f"{seed}:{_commit_no(db)}")

    def before_statement(statement: str) -> None:
        if statement.lstrip().upper().startswith("COMMIT") and (
                _kill_at_commit or rng.random() < probability):
            os.write(2, MARK)
            os.kill(os.getpid(), signal.SIGKILL)

    db.set_trace_callback(before_statement)
    if listen is not None and _card_crash is not None:
        listen(_at_card_entry)
    return True


def _at_card_entry(event: Any) -> None:
    """A store listener: the armed card's entry given out with no COMMIT before it."""
    if _kill_at_commit and event.kind == "card" and _card_crash is not None and \
            event.payload.get("index") == _card_crash[0]:
        os.write(2, MARK)
        os.kill(os.getpid(), signal.SIGKILL)


def _commit_no(db: sqlite3.Connection) -> int | None:
    """The store's commit counter (critical memory's seal), or None outside a table store."""
    try:
        row = db.execute("SELECT commit_no FROM critical_seal").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else int(row[0])


def before_card_step(index: int) -> None:
    """The table is about to handle the shoe's card ``index`` (controller/card_commits.py):
    with CARD_CRASH_ENV armed for it, the step's COMMIT is the daemon's last act."""
    global _kill_at_commit
    if _card_crash is None or _card_crash[0] != index or os.path.exists(_card_crash[1]):
        return
    with open(_card_crash[1], "x", encoding="ascii") as once:
        once.write(f"{index}\n")
    _kill_at_commit = True
