"""Linked progressives (605a.8) against the real PostgreSQL on 127.0.0.1:5432.

Several simulated tables, each with its own SQLite store and outbox, share one
meter: contributions arrive exactly once through dropped connections and lost
acknowledgements; simultaneous hits queue on the level's row lock and are each
paid once at the right amount; a table whose link is down stops accepting the
progressive (LEDs UNAVAILABLE) and catches up when the link returns.
"""

from __future__ import annotations

import random
import secrets
import shutil
import threading
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from controller.progressive.errors import LinkDown
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LedState, LockedOut
from tests.progressive.conftest import (
    HARMONY, HEAVENLY_9, PG_DSN, ROYAL_9, PG_HOST, PG_PORT, base, config, package_required,
    service_required, view,
)

SUITED_NINES = view("2S 3S 4S", "AS 4S 4S")  # 631c.2(g)(1): pays 100% of the meter
H9_SEED = 1_000_000  # 631c.2(i)
H9_PER_WAGER = Fraction(50)  # 10% of $5 (631c.2(i))
TABLES = 3
ROUNDS_PER_TABLE = 30
THREAD_TIMEOUT_S = 40.0  # bounded wait for the table threads; they finish in a few seconds
BAD_DSN = "host=127.0.0.1 port=1 dbname=test user=postgres"  # nothing listens on port 1


@pytest.fixture
def schema() -> Iterator[str]:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    package_required("psycopg", "on 32-bit Raspberry Pi OS the test extra installs psycopg "
                     "without its binary wheel: apt install libpq5")
    import psycopg

    name = f"tabled_test_{secrets.token_hex(6)}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        yield name
        admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def _table(tmp_path: Path, schema: str, table_id: str, progressive: dict[str, Any] = HEAVENLY_9,
           dsn: str = PG_DSN) -> ProgressiveSystem:
    cfg = config({**progressive, "linked": True}, name="h9", table_id=table_id, extra={
        "linked": {"dsn": dsn, "schema": schema, "group": "floor-1", "timeout_s": 5}})
    return ProgressiveSystem.from_config(cfg, Store(tmp_path / f"{table_id}.sqlite"))


def _terminate(table_prefix: str) -> int:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "application_name LIKE %s", (f"tabled-{table_prefix}%",)).fetchall()
    return len(rows)


def _level(system: ProgressiveSystem) -> dict[str, Any]:
    system.sync()
    return next(m for m in system.meters() if m["level"] == "progressive")


def _close(system: ProgressiveSystem) -> None:
    system.close()
    system.store.close()


def test_605a_8_three_tables_contribute_through_dropped_connections(tmp_path: Path,
                                                                    schema: str) -> None:
    prefix = f"X{secrets.token_hex(3)}"
    accepted: dict[str, int] = {}
    refused_while_down: dict[str, int] = {}
    errors: list[BaseException] = []
    halfway = threading.Barrier(TABLES + 1, timeout=THREAD_TIMEOUT_S)
    resumed = threading.Barrier(TABLES + 1, timeout=THREAD_TIMEOUT_S)

    def run(table_id: str, index: int) -> None:
        try:
            rng = random.Random(index)
            system = _table(tmp_path, schema, table_id)
            count = 0
            for round_id in range(1, ROUNDS_PER_TABLE + 1):
                if round_id == ROUNDS_PER_TABLE // 2:
                    halfway.wait()  # the admin drops every table's session here...
                    resumed.wait()  # ...and the tables carry on against dead connections
                system.open_betting()
                seats = {s for s in range(1, 15) if rng.random() < 0.5}
                acceptance = system.on_lock(LockedOut("button", 0.0, frozenset(seats)),
                                            base(sorted(seats)), round_id)
                count += len(acceptance.accepted)
                refused_while_down[table_id] = refused_while_down.get(table_id, 0) + sum(
                    1 for r in acceptance.refused if "unavailable" in r.reason)
            for _ in range(5):  # catch up: bounded retries, each a real reconnect
                system.sync()
                if system.availability()["h9"] is None and not system.ledger.unacked():
                    break
            accepted[table_id] = count
            _close(system)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"{prefix}-{n}", n))
               for n in range(TABLES)]
    for thread in threads:
        thread.start()
    halfway.wait()
    assert _terminate(prefix) == TABLES  # every table's session dropped mid-shoe
    resumed.wait()
    for thread in threads:
        thread.join(THREAD_TIMEOUT_S)
    assert not errors, errors
    assert len(accepted) == TABLES
    assert sum(refused_while_down.values()) > 0  # the drop was noticed and the wager withdrawn
    checker = _table(tmp_path, schema, f"{prefix}-audit")
    meter = _level(checker)
    total = sum(accepted.values())
    assert Fraction(meter["amount_cents"]) + Fraction(meter["sub_cent"]) == \
        H9_SEED + total * H9_PER_WAGER
    assert checker.verify() == []
    import psycopg

    with psycopg.connect(PG_DSN) as admin:
        rows = admin.execute(f"SELECT COALESCE(SUM(wagers_count), 0), COUNT(*) FROM "
                             f"{schema}.contributions").fetchone()
    assert rows is not None and rows[0] == total  # every accepted wager counted once
    _close(checker)


def test_605a_8_a_lost_acknowledgement_is_not_counted_twice(tmp_path: Path, schema: str) -> None:
    system = _table(tmp_path, schema, "T-ACK")
    calls = {"n": 0}

    def crash_after_commit() -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise LinkDown("connection lost after the server committed")

    assert system.linked is not None
    system.linked.after_server_commit = crash_after_commit
    system.on_lock(LockedOut("button", 0.0, frozenset({1, 2})), base([1, 2]), 1)
    assert len(system.ledger.unacked()) == 1  # sent and committed, but never acknowledged
    system.sync()  # re-sent: the server already has (table, seq) and ignores it
    assert system.ledger.unacked() == []
    assert _level(system)["amount_cents"] == H9_SEED + 100
    assert system.verify() == []
    _close(system)


def test_605a_8_simultaneous_hits_are_ordered_and_each_paid_once(tmp_path: Path,
                                                                  schema: str) -> None:
    systems = [_table(tmp_path, schema, f"T-HIT-{n}") for n in range(TABLES)]
    for system in systems:
        system.on_lock(LockedOut("button", 0.0, frozenset({3})), base([3]), 1)
        system.sync()
    start = threading.Barrier(TABLES, timeout=THREAD_TIMEOUT_S)
    results: dict[int, Any] = {}

    def hit(n: int) -> None:
        start.wait()
        results[n] = systems[n].on_round_result(1, SUITED_NINES, [])

    threads = [threading.Thread(target=hit, args=(n,)) for n in range(TABLES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(THREAD_TIMEOUT_S)
    amounts = sorted((award.amount_cents for awards in results.values() for award in awards),
                     reverse=True)
    # The first claimant takes the seed plus the three tables' contributions; the others, in
    # the row lock's order, the reseeded meter.
    assert amounts == [H9_SEED + 150, H9_SEED, H9_SEED]
    import psycopg

    with psycopg.connect(PG_DSN) as admin:
        ordered = [row[0] for row in admin.execute(
            f"SELECT amount_cents FROM {schema}.awards ORDER BY level_version")]
    assert ordered == amounts  # the row lock's order is the order of payment
    for system in systems:
        assert _level(system)["amount_cents"] == H9_SEED  # every table sees the reset meter
        again = system.on_round_result(1, SUITED_NINES, [])  # replay: paid once
        assert len(again) == 1
        paid = system.validate_award(again[0].award_id, "Dana Floor")
        assert paid.state == "paid"
    assert systems[0].verify() == []
    assert _level(systems[0])["awards_count"] == TABLES
    for system in systems:
        _close(system)


def test_605a_8_link_down_makes_the_wager_unavailable_then_catches_up(tmp_path: Path,
                                                                     schema: str) -> None:
    system = _table(tmp_path, schema, "T-DOWN")
    assert system.availability() == {"h9": None}
    assert set(system.open_betting().values()) == {LedState.AWAITING}
    assert system.linked is not None
    system.linked.dsn = BAD_DSN  # the casino LAN to the server fails...
    _terminate("T-DOWN")  # ...and the live session with it
    # This lock had been offered while the link looked up: accepted, kept in the outbox.
    system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
    reason = system.availability()["h9"]
    assert reason is not None and "unreachable" in reason
    assert set(system.open_betting().values()) == {LedState.UNAVAILABLE}
    refused = system.on_lock(LockedOut("button", 0.0, frozenset({2})), base([2]), 2)
    assert not refused.accepted and "unavailable" in refused.refused[0].reason
    # A hit during the outage stands; its amount is claimed when the link returns.
    system.on_lock(LockedOut("button", 0.0, frozenset()), [], 3)
    system.linked.dsn = PG_DSN
    assert set(system.open_betting().values()) == {LedState.AWAITING}
    assert system.ledger.unacked() == []
    assert _level(system)["amount_cents"] == H9_SEED + 50  # the queued contribution arrived
    assert system.verify() == []
    _close(system)


def test_605a_8_hit_while_the_link_is_down_is_claimed_on_return(tmp_path: Path,
                                                                schema: str) -> None:
    system = _table(tmp_path, schema, "T-LATE")
    system.on_lock(LockedOut("button", 0.0, frozenset({5})), base([5]), 1)
    assert system.linked is not None
    system.linked.dsn = BAD_DSN
    _terminate("T-LATE")
    (award,) = system.on_round_result(1, SUITED_NINES, [])
    assert not award.claimed
    with pytest.raises(Exception, match="linked ledger"):
        system.validate_award(award.award_id, "Dana Floor")
    system.linked.dsn = PG_DSN
    paid = system.validate_award(award.award_id, "Dana Floor")
    assert (paid.amount_cents, paid.state) == (H9_SEED + 50, "paid")
    assert _level(system)["amount_cents"] == H9_SEED
    _close(system)


def test_627b_6_linked_harmony_reseeds_with_the_shared_reserve(tmp_path: Path,
                                                                schema: str) -> None:
    systems = [_table(tmp_path, schema, f"T-HA-{n}", HARMONY) for n in range(2)]
    for system in systems:
        system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
        system.sync()
    six_fives = view("5S 5H 5D", "5C 5S 5H")  # 627b.6(g)(1)
    (first,) = systems[0].on_round_result(1, six_fives, [])
    (second,) = systems[1].on_round_result(1, six_fives, [])
    # $3 wagers, paytable B: 57 cents each to the meter, 15 cents each to the reserve.
    assert (first.amount_cents, second.amount_cents) == (500_000 + 114, 500_000 + 30)
    assert systems[0].verify() == []
    for system in systems:
        _close(system)


def test_605a_8_a_rolled_back_lock_never_reaches_the_server(tmp_path: Path, schema: str) -> None:
    system = _table(tmp_path, schema, "T-ROLL")
    with pytest.raises(RuntimeError):
        with system.store.transaction():  # the table's own transaction around the hook
            system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
            raise RuntimeError("power cut before the table committed")
    assert _level(system)["amount_cents"] == H9_SEED
    system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)  # the replay
    assert _level(system)["amount_cents"] == H9_SEED + 50
    assert system.verify() == []
    _close(system)


async def test_605a_8_sync_async_keeps_network_io_off_the_loop(tmp_path: Path,
                                                               schema: str) -> None:
    cfg = config({**HEAVENLY_9, "linked": True}, name="h9", table_id="T-ASYNC", extra={
        "linked": {"dsn": PG_DSN, "schema": schema, "group": "floor-1"}})
    system = ProgressiveSystem.from_config(cfg, Store(tmp_path / "a.sqlite"), sync_on_open=False)
    with system.store.transaction():  # the table's transaction: nothing is sent from inside it
        system.on_lock(LockedOut("button", 0.0, frozenset({1, 2})), base([1, 2]), 1)
    assert len(system.ledger.unacked()) == 1
    await system.sync_async()
    assert system.ledger.unacked() == []
    meter = next(m for m in system.meters() if m["level"] == "progressive")
    assert meter["amount_cents"] == H9_SEED + 100 and not meter["stale"]
    _close(system)


@pytest.mark.parametrize(("login", "table_id", "group", "wrong"), [
    ("Robert'); DROP", "T1", "pit", "login"), ("t1", "", "pit", "table id"),
    ("t1", "x" * 65, "pit", "table id"), ("t1", "O'Brien", "pit", "table id"),
    ("t1", "T1", "", "group"), ("t1", "T1", "pit'; DROP", "group")])
def test_a_table_login_registration_takes_only_plain_names(login: str, table_id: str,
                                                           group: str, wrong: str) -> None:
    """The administrator's registration line is built from plain names only: a login that is
    not an identifier, a table id or a group empty, over 64 characters or holding a quote is
    refused before any SQL is written."""
    from controller.progressive.linked import table_login_sql

    with pytest.raises(ValueError, match=f"^{wrong} "):
        table_login_sql("tabled_linked", login, table_id, group)
    assert table_login_sql("tabled_linked", "linked_t_bac_01", "BAC-01", "pit-a") == (
        "INSERT INTO tabled_linked.table_logins(login, table_id, grp) VALUES ("
        "'linked_t_bac_01', 'BAC-01', 'pit-a') ON CONFLICT (login) DO UPDATE SET table_id = "
        "excluded.table_id, grp = excluded.grp")


def _copy_store(source: Path, target: Path) -> None:
    """A stopped table's store file (and its write-ahead log) copied, as to a new card."""
    target.mkdir()
    for path in source.glob("*.sqlite*"):
        shutil.copy2(path, target / path.name)


def test_605a_8_a_replaced_store_is_counted_and_claims_its_own_hits(tmp_path: Path,
                                                                      schema: str) -> None:
    """A table whose store is replaced (a new SD card, the same table id) numbers its
    contributions and rounds from 1 again. The ledger keyed a contribution by table and
    number alone, so the new store's first rows were taken for the old store's re-sent and
    ignored (the shared meter short by every wager, each acknowledged), and a hit at the
    same round and seat was given the old store's award back instead of the meter."""
    old_card, new_card = tmp_path / "old", tmp_path / "new"
    old_card.mkdir(), new_card.mkdir()
    first = _table(old_card, schema, "T-SD")
    first.on_lock(LockedOut("button", 0.0, frozenset({5})), base([5]), 1)
    (old_award,) = first.on_round_result(1, SUITED_NINES, [])
    assert old_award.amount_cents == H9_SEED + 50
    _close(first)
    second = _table(new_card, schema, "T-SD")
    assert second.ledger.link_store() != ""
    second.on_lock(LockedOut("button", 0.0, frozenset({5, 6})), base([5, 6]), 1)
    second.sync()
    assert second.ledger.unacked() == []
    assert _level(second)["amount_cents"] == H9_SEED + 100  # was H9_SEED: both ignored
    awards = second.on_round_result(1, SUITED_NINES, [])
    # One seat takes the meter, the other the reseeded one (before: seat 5 was given the
    # old store's award again, 50 cents, and the meter was not paid).
    assert sorted(a.seat for a in awards) == [5, 6]
    assert sorted(a.amount_cents for a in awards) == [H9_SEED, H9_SEED + 100]
    assert _level(second)["amount_cents"] == H9_SEED
    assert _level(second)["awards_count"] == 3
    assert second.verify() == []
    _close(second)


def test_605a_8_a_store_rewound_to_an_earlier_copy_is_refused_by_name_not_lost(
        tmp_path: Path, schema: str) -> None:
    """A store put back to an earlier copy of itself (the same name in the ledger) numbers
    again rows the ledger holds: one with other content is refused, with the reason shown
    at the table, never ignored as a re-send; the ledger's meter keeps what it had."""
    card, backup = tmp_path / "card", tmp_path / "backup"
    card.mkdir()
    system = _table(card, schema, "T-RW")
    system.on_lock(LockedOut("button", 0.0, frozenset({5})), base([5]), 1)
    system.sync()
    _close(system)
    _copy_store(card, backup)  # the copy: round 1 sent
    system = _table(card, schema, "T-RW")
    system.on_lock(LockedOut("button", 0.0, frozenset({5})), base([5]), 2)
    system.sync()
    name = system.ledger.link_store()
    _close(system)
    rewound = _table(backup, schema, "T-RW")
    assert rewound.ledger.link_store() == name
    rewound.on_lock(LockedOut("button", 0.0, frozenset({5, 6})), base([5, 6]), 2)
    rewound.sync()
    reason = rewound.availability()["h9"]
    assert reason == (
        f"linked ledger refused this table's request (LK006): linked contribution 2 of table "
        f"T-RW (store {name}) refused: the ledger holds another row under "
        "that number (round 2, 1 wagers there; round 2, 2 wagers sent): the table's store was "
        "rewound or copied")
    assert set(rewound.open_betting().values()) == {LedState.UNAVAILABLE}
    assert len(rewound.ledger.unacked()) == 1  # kept, not acknowledged
    import psycopg

    with psycopg.connect(PG_DSN) as admin:
        assert admin.execute(f"SELECT amount_cents FROM {schema}.levels").fetchone() == (
            H9_SEED + 100,)
    _close(rewound)


def test_605a_8_a_table_whose_terms_are_not_its_groups_offers_no_linked_wager(
        tmp_path: Path, schema: str) -> None:
    """The tables of a group share one meter per level; a table configured with another
    reset or another increment rate would reseed it, or pay into it, by its own terms. It
    offers no linked wager and says which terms differ; the group's table plays on."""
    first = _table(tmp_path, schema, "T-TERMS-1", {**ROYAL_9})
    meters = {**ROYAL_9["meters"], "minor": {"reset_cents": 50_000, "increment_percent": "1.5"},
              "major": {"reset_cents": 45_000, "increment_percent": "2"}}
    other = _table(tmp_path, schema, "T-TERMS-2", {**ROYAL_9, "meters": meters})
    try:
        assert first.availability() == {"h9": None}
        assert other.availability() == {"h9": (
            "linked group floor-1: this table's terms are not its group's (h9/major: this "
            "table's reset 45000 cents and rate 1/50, the group's 45000 cents and 3/200; "
            "h9/minor: this table's reset 50000 cents and rate 3/200, the group's 45000 "
            "cents and 3/200): every table of a group plays one Rules Submission's meters; "
            "correct the configuration")}
        refused = other.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
        assert not refused.accepted
        other.sync()  # a catch-up does not clear it
        assert other.availability()["h9"] is not None
        accepted = first.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
        assert [w.seat for w in accepted.accepted] == [1]
        assert first.verify() == []
    finally:
        _close(first)
        _close(other)


def test_605a_8_a_level_of_the_group_this_table_does_not_play_is_not_its_to_judge(
        tmp_path: Path, schema: str) -> None:
    """A group's level that an earlier release seeded has no rate until a table of this
    release that plays it names it; a table that plays other levels of the group starts and
    plays (before: its terms check read that level's missing rate and the start failed)."""
    import psycopg

    from controller.progressive.linked import schema_sql

    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        for statement in schema_sql(schema):
            admin.execute(statement)
        admin.execute(f"INSERT INTO {schema}.levels(grp, progressive, level, amount_cents,"
                      " frac_num, frac_den, seed_cents, reset_cents, version) VALUES"
                      " ('floor-1', 'royal', 'mega', 5000000, 0, 1, 5000000, 5000000, 1)")
    system = _table(tmp_path, schema, "T-OTHER-LEVEL")
    try:
        assert system.availability() == {"h9": None}
        accepted = system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
        assert [w.seat for w in accepted.accepted] == [1]
        assert _level(system)["amount_cents"] == H9_SEED + 50
    finally:
        _close(system)


def test_605a_8_the_administrators_seed_sets_the_groups_terms_before_any_table(
        tmp_path: Path, schema: str) -> None:
    """docs/deployment.md: the administrator seeds each level with the Rules Submission's
    terms before the tables start (ruling P8), so the first table to start cannot set
    them: a misconfigured one, though first, offers no linked wager; a table with the
    seeded terms plays, and its meter starts at the administrator's seed."""
    import psycopg

    from controller.progressive.linked import schema_sql

    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        for statement in schema_sql(schema):
            admin.execute(statement)
        for level, reset, rate in (("mega", 5_000_000, "1/50"), ("major", 45_000, "3/200"),
                                   ("minor", 45_000, "3/200")):
            admin.execute(f"SELECT {schema}.seed_level('floor-1', 'h9', %s, %s, %s)",
                          (level, reset, rate))
    meters = {**ROYAL_9["meters"], "minor": {"reset_cents": 50_000, "increment_percent": "1.5"}}
    first = _table(tmp_path, schema, "T-SEEDED-1", {**ROYAL_9, "meters": meters})
    second = _table(tmp_path, schema, "T-SEEDED-2", {**ROYAL_9})
    try:
        assert first.availability() == {"h9": (
            "linked group floor-1: this table's terms are not its group's (h9/minor: this "
            "table's reset 50000 cents and rate 3/200, the group's 45000 cents and 3/200): "
            "every table of a group plays one Rules Submission's meters; correct the "
            "configuration")}
        assert second.availability() == {"h9": None}
        second.sync()
        assert {m["level"]: m["amount_cents"] for m in second.meters()} == {
            "mega": 5_000_000, "major": 45_000, "minor": 45_000}
    finally:
        _close(first)
        _close(second)
