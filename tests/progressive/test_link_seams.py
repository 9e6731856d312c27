"""The pit campaign's seams in the linked progressive's link (controller/progressive/link_seams.py)
against the real PostgreSQL on 127.0.0.1:5432.

Without their environment variables nothing is installed: a claim ignores a held advisory
lock and the outbox is sent with a hold file present, as in service. With them: a linked
hit at the gated seat waits for the lock and both tables' claims start only once the harness
lets go, then queue on the level's row lock, ordered and each paid once (605a.8); a hit at
another seat is not held; the outbox stays unsent while the hold file exists and is sent,
once, when it goes.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.memory.store import Store
from controller.progressive import link_seams
from controller.progressive.link_seams import CLAIM_GATE_ENV, SYNC_HOLD_ENV
from controller.progressive.system import ProgressiveSystem
from drivers.protocols import LockedOut
from tests.progressive.conftest import (
    HEAVENLY_9, PG_DSN, PG_HOST, PG_PORT, base, close, config, package_required, service_required,
    view,
)

SUITED_NINES = view("2S 3S 4S", "AS 4S 4S")  # 631c.2(g)(1): pays 100% of the meter
H9_SEED = 1_000_000  # 631c.2(i)
H9_PER_WAGER = 50  # 10% of $5 (631c.2(i)), in cents
GATE_KEY = 424_242
GATED_SEAT, OTHER_SEAT = 3, 4
THREAD_TIMEOUT_S = 40.0  # bounded waits; each step takes milliseconds on an idle machine


@pytest.fixture
def schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    package_required("psycopg", "the linked ledger's client")
    import psycopg

    monkeypatch.delenv(CLAIM_GATE_ENV, raising=False)
    monkeypatch.delenv(SYNC_HOLD_ENV, raising=False)
    name = f"tabled_seam_{secrets.token_hex(6)}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        yield name
        admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def table(tmp_path: Path, schema: str, table_id: str) -> ProgressiveSystem:
    cfg = config({**HEAVENLY_9, "linked": True}, name="h9", table_id=table_id, extra={
        "linked": {"dsn": PG_DSN, "schema": schema, "group": "floor-1", "timeout_s": 5}})
    return ProgressiveSystem.from_config(cfg, Store(tmp_path / f"{table_id}.sqlite"))


def lock_at(system: ProgressiveSystem, seat: int, round_id: int = 1) -> None:
    """A progressive wager at `seat` accepted at the lock-out (one contribution booked)."""
    acceptance = system.on_lock(LockedOut("button", 0.0, frozenset({seat})), base([seat]),
                                round_id)
    assert [w.seat for w in acceptance.accepted] == [seat]


def in_thread(target: Any) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def waiting_on_gate(admin: Any) -> int:
    return int(admin.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND "
        "mode = 'ShareLock' AND classid = 0 AND objid = %s", (GATE_KEY,)).fetchone()[0])


def server_awards(schema: str) -> list[tuple[str, int, int]]:
    import psycopg

    with psycopg.connect(PG_DSN) as conn:
        return [(table, int(a), int(v)) for table, a, v in conn.execute(
            f"SELECT table_id, amount_cents, level_version FROM {schema}.awards "
            "ORDER BY level_version")]


def test_without_the_variables_no_seam_is_installed_and_play_is_unchanged_605a_8(
        tmp_path: Path, schema: str) -> None:
    import psycopg

    hold = tmp_path / "hold"
    hold.touch()  # present, and ignored: no variable names it
    system = table(tmp_path, schema, "T-PLAIN")
    assert system.linked is not None
    assert system.linked.claim_gate is None and system.link.hold is None
    lock_at(system, GATED_SEAT)  # outside a step: the lock-out sends its contribution at once
    assert system.ledger.unacked() == []
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY,))
        awards: list[Any] = []
        thread = in_thread(lambda: awards.extend(system.on_round_result(1, SUITED_NINES, [])))
        thread.join(THREAD_TIMEOUT_S)  # the held lock is nothing to it
        assert not thread.is_alive() and waiting_on_gate(admin) == 0
        admin.execute("SELECT pg_advisory_unlock(%s)", (GATE_KEY,))
    assert [(a.seat, a.amount_cents) for a in awards] == [(GATED_SEAT, H9_SEED + H9_PER_WAGER)]
    close(system)


def test_the_claim_gate_holds_a_pair_of_hits_until_released_then_they_race_605a_8(
        tmp_path: Path, schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    monkeypatch.setenv(CLAIM_GATE_ENV, f"{GATE_KEY}:{GATED_SEAT}")
    pair = [table(tmp_path, schema, f"T-GATE-{n}") for n in (1, 2)]
    other = table(tmp_path, schema, "T-OTHER")
    assert pair[0].linked is not None
    assert pair[0].linked.claim_gate == link_seams.ClaimGate(GATE_KEY, GATED_SEAT)
    for system in pair:
        lock_at(system, GATED_SEAT)
    lock_at(other, OTHER_SEAT)
    results: dict[str, list[Any]] = {}

    def hit(system: ProgressiveSystem) -> None:
        results[system.config.table_id] = system.on_round_result(1, SUITED_NINES, [])

    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY,))
        threads = [in_thread(lambda s=s: hit(s)) for s in pair]
        deadline = time.monotonic() + THREAD_TIMEOUT_S
        while waiting_on_gate(admin) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waiting_on_gate(admin) == 2
        # A hit at another seat is not held.
        in_thread(lambda: hit(other)).join(THREAD_TIMEOUT_S)
        assert [(a.seat, a.amount_cents) for a in results["T-OTHER"]] == \
            [(OTHER_SEAT, H9_SEED + 3 * H9_PER_WAGER)]
        assert server_awards(schema) == [("T-OTHER", H9_SEED + 3 * H9_PER_WAGER, 5)]
        assert all(t.is_alive() for t in threads)  # the pair still held at the gate
        released = admin.execute("SELECT clock_timestamp()").fetchone()[0]
        admin.execute("SELECT pg_advisory_unlock(%s)", (GATE_KEY,))
        for thread in threads:
            thread.join(THREAD_TIMEOUT_S)
        starts = [row[0] for row in admin.execute(
            f"SELECT claimed_at FROM {schema}.awards WHERE claim_key LIKE 'T-GATE-%'")]
    assert not any(t.is_alive() for t in threads)
    # Both claims' transactions began after the release (now() is the transaction's start).
    assert len(starts) == 2 and min(starts) > released
    # 605a.8: ordered by the row lock; the first is paid the meter (the seed: T-OTHER's hit
    # took everything before), the second the reseeded meter; each once.
    ordered = server_awards(schema)
    assert [(a, v) for _, a, v in ordered] == [(H9_SEED + 3 * H9_PER_WAGER, 5), (H9_SEED, 6),
                                               (H9_SEED, 7)]
    assert {t for t, _, _ in ordered[1:]} == {"T-GATE-1", "T-GATE-2"}
    assert sorted(a.amount_cents for r in results.values() for a in r) == \
        [H9_SEED, H9_SEED, H9_SEED + 3 * H9_PER_WAGER]
    assert pair[0].verify() == []
    close(*pair, other)


def test_the_sync_hold_keeps_the_outbox_until_its_path_is_removed_605a_8(
        tmp_path: Path, schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    hold = tmp_path / "hold"
    monkeypatch.setenv(SYNC_HOLD_ENV, str(hold))
    system = table(tmp_path, schema, "T-HOLD")  # its start's sync runs: the levels seeded
    monkeypatch.delenv(SYNC_HOLD_ENV)
    other = table(tmp_path, schema, "T-FREE")
    assert other.link.hold is None
    hold.touch()
    lock_at(system, GATED_SEAT)
    lock_at(other, OTHER_SEAT)  # sent at once
    system.sync()
    assert [r["seq"] for r in system.ledger.unacked()] == [1]
    # Held, the link still reads the shared meter: the other table's contribution shows.
    assert _meter(system) == H9_SEED + H9_PER_WAGER
    with psycopg.connect(PG_DSN) as conn:
        count = f"SELECT table_id, count(*) FROM {schema}.contributions GROUP BY table_id"
        assert conn.execute(count).fetchall() == [("T-FREE", 1)]
        hold.unlink()
        system.sync()
        assert system.ledger.unacked() == []
        assert sorted(conn.execute(count).fetchall()) == [("T-FREE", 1), ("T-HOLD", 1)]
        system.sync()  # sent once: nothing is sent again
        assert sorted(conn.execute(count).fetchall()) == [("T-FREE", 1), ("T-HOLD", 1)]
    assert _meter(system) == H9_SEED + 2 * H9_PER_WAGER
    close(system, other)


def _meter(system: ProgressiveSystem) -> int:
    """The shared meter as the table last read it (no sync of its own)."""
    return int(next(m for m in system.meters() if m["level"] == "progressive")["amount_cents"])


@pytest.mark.parametrize("spec", ["5", "abc:5", "0:5", "3001:0", f"{2**31}:5"])
def test_a_bad_claim_gate_is_refused_naming_the_variable(
        spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLAIM_GATE_ENV, spec)
    with pytest.raises(ValueError, match=f"{CLAIM_GATE_ENV} = '{spec}'"):
        link_seams.claim_gate()
