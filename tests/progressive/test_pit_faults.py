"""Faults of a pit's shared servers, one at a time, on servers of the test's own
(hil/pit_servers.py: a PostgreSQL cluster and a Mosquitto in a scratch folder, restarted at
will without touching the ones other programs use).

605a.8: while the link is down the linked wager is unavailable at that table and only
there; contributions reach the meter exactly once when it returns; the meter is its seed
plus every acknowledged contribution, to the exact fraction of a cent. The feed: a broker
restarted without persistence forgets the retained messages, and each table sends its
status, liveness and meters again when it reconnects. (Simultaneous hits and a table
killed between the server's commit and its acknowledgement: tests/progressive/test_linked.py;
the same faults with real daemons: hil/test_pit.py.)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LedState, LockedOut
from hil.cuttable_proxy import CuttableProxy
from hil.pit_servers import PrivateBroker, PrivatePostgres, require_private_servers
from tests.progressive.conftest import HEAVENLY_9, base, close, config, package_required

H9_SEED = 1_000_000  # 631c.2(i)
H9_PER_WAGER = Fraction(50)  # 10% of $5 (631c.2(i))
SEATS = (1, 3, 5)
DELIVERY_TIMEOUT_S = 30.0  # a local broker answers in ms; a loaded machine, slower


def servers_or_skip() -> None:
    package_required("psycopg", "the linked ledger's client")
    require_private_servers()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivatePostgres]:
    servers_or_skip()
    with PrivatePostgres() as pg:
        yield pg


def table(tmp_path: Path, dsn: str, table_id: str, schema: str, **extra: Any) -> ProgressiveSystem:
    cfg = config({**HEAVENLY_9, "linked": True}, name="h9", table_id=table_id, extra={
        "linked": {"dsn": dsn, "schema": schema, "group": "pit", "timeout_s": 2}, **extra})
    return ProgressiveSystem.from_config(cfg, Store(tmp_path / f"{table_id}.sqlite"))


def play_round(system: ProgressiveSystem, round_id: int) -> int:
    """One round with the progressive at SEATS: how many wagers were accepted."""
    leds = system.open_betting()
    acceptance = system.on_lock(LockedOut("button", 0.0, frozenset(SEATS)), base(SEATS),
                                round_id)
    if system.availability()["h9"] is not None:
        assert set(leds.values()) <= {LedState.UNAVAILABLE}
    return len(acceptance.accepted)


def shared_amount(system: ProgressiveSystem) -> Fraction:
    system.sync()
    meter = next(m for m in system.meters() if m["level"] == "progressive")
    return Fraction(meter["amount_cents"]) + Fraction(meter["sub_cent"])


def test_605a_8_postgres_restarted_mid_play_loses_and_doubles_nothing(
        tmp_path: Path, postgres: PrivatePostgres) -> None:
    tables = [table(tmp_path, postgres.dsn, f"R{n}", "restart") for n in range(3)]
    accepted = 0
    for round_id in range(1, 6):
        accepted += sum(play_round(t, round_id) for t in tables)
    postgres.restart()  # immediate: every session cut, as by a crash of the server
    refused = 0
    for round_id in range(6, 11):
        for t in tables:
            got = play_round(t, round_id)
            accepted += got
            refused += len(SEATS) - got
    assert refused >= len(SEATS)  # the first lock after the restart found the link down
    for t in tables:
        t.sync()
        assert t.availability() == {"h9": None} and t.ledger.unacked() == []
    assert shared_amount(tables[0]) == H9_SEED + accepted * H9_PER_WAGER
    assert tables[0].verify() == []
    close(*tables)


def test_605a_8_one_table_cut_off_only_that_table_loses_the_wager(
        tmp_path: Path, postgres: PrivatePostgres) -> None:
    proxy = CuttableProxy(("127.0.0.1", postgres.port))
    cut_dsn = postgres.dsn.replace(f"port={postgres.port}", f"port={proxy.port}")
    a, b = (table(tmp_path, postgres.dsn, f"C{n}", "cut") for n in range(2))
    c = table(tmp_path, cut_dsn, "C2", "cut")
    try:
        assert [play_round(t, 1) for t in (a, b, c)] == [3, 3, 3]
        proxy.cut()
        c.sync()  # the table's periodic sync meets the cut
        reason = c.availability()["h9"]
        assert reason is not None and reason.startswith("linked ledger unreachable")
        assert set(c.open_betting().values()) == {LedState.UNAVAILABLE}
        during = [[play_round(t, r) for t in (a, b, c)] for r in range(2, 5)]
        assert during == [[3, 3, 0]] * 3  # the others go on; C refuses the linked wager
        assert shared_amount(a) == H9_SEED + (9 + 18) * H9_PER_WAGER  # round 1, then A and B
        proxy.restore()
        assert play_round(c, 5) == 3  # open_betting() caught up and offered it again
        c.sync()
        assert shared_amount(a) == H9_SEED + (9 + 18 + 3) * H9_PER_WAGER
        assert a.verify() == []
    finally:
        close(a, b, c)
        proxy.close()


def refused_by_the_ledger(connection: Any, statement: str, sqlstate: str, message: str) -> None:
    """`statement` is refused by the ledger's own functions, with this code and message."""
    import psycopg

    with pytest.raises(psycopg.DatabaseError, match=message) as refused:
        connection.execute(statement)
    assert refused.value.sqlstate == sqlstate


def test_605a_8_the_tables_role_plays_with_the_documented_grants_and_moves_no_meter_itself(
        tmp_path: Path, postgres: PrivatePostgres) -> None:
    """With the documented grants a table plays, and its role can change the shared ledger
    only through its functions: it cannot set a meter, write a contribution or an award
    itself, delete or rewrite one; the functions refuse a contribution larger than the
    wagers it names, a claim of more than the whole meter, a claim in another table's name
    and any write in another link group than the login's; a login role outside the tables'
    group cannot call them. Before, the role held
    UPDATE on the levels: one statement set the pit's shared meter to any amount."""
    import psycopg

    from controller.progressive.linked import schema_sql, table_grants_sql, table_login_sql

    with psycopg.connect(postgres.dsn, autocommit=True) as admin:  # the administrator, once
        for statement in [*schema_sql("granted"), "CREATE ROLE granted_tables NOLOGIN",
                          "CREATE ROLE granted_t_bac_01 LOGIN IN ROLE granted_tables",
                          "CREATE ROLE granted_stranger LOGIN",
                          "CREATE ROLE granted_t_bac_09 LOGIN IN ROLE granted_tables",
                          "GRANT USAGE ON SCHEMA granted TO granted_stranger",
                          *table_grants_sql("granted", "granted_tables"),
                          table_login_sql("granted", "granted_t_bac_01", "BAC-01", "pit")]:
            admin.execute(statement)
    dsn = postgres.dsn.replace("user=postgres", "user=granted_t_bac_01")
    system = table(tmp_path, dsn, "BAC-01", "granted")
    try:
        assert system.availability() == {"h9": None}  # no CREATE right needed to start
        assert play_round(system, 1) == 3
        assert shared_amount(system) == H9_SEED + 3 * H9_PER_WAGER
        with psycopg.connect(dsn, autocommit=True) as table_role:
            for statement in (
                    "DELETE FROM granted.contributions",
                    "UPDATE granted.awards SET amount_cents = 0",
                    "TRUNCATE granted.levels",
                    "UPDATE granted.levels SET amount_cents = 100000000",
                    "INSERT INTO granted.levels VALUES ('pit', 'h9', 'x', 9, 0, 1, 9, 9, 1)",
                    "INSERT INTO granted.contributions(grp, table_id, seq, progressive, level,"
                    " delta_num, delta_den, wagers_count, wagers_cents) VALUES"
                    " ('pit', 'BAC-01', 999, 'h9', 'progressive', 100000000, 1, 1, 500)",
                    "INSERT INTO granted.awards(grp, claim_key, progressive, level, table_id,"
                    " round_id, seat, amount_cents, reseed_cents, level_version) VALUES"
                    " ('pit', 'k', 'h9', 'progressive', 'BAC-01', 1, 1, 5, 0, 99)"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    table_role.execute(statement)
            refused_by_the_ledger(
                table_role, "SELECT granted.contribute('pit', 'BAC-01', 'x', '{999}', '{h9}',"
                " '{progressive}', '{100000000}', '{1}', '{1}', '{500}', '{NULL}')", "LK002",
                r"linked contribution 999 of table BAC-01 refused: 100000000/1 cents is not a "
                r"share of its 500 cents of wagers")
            # All of a $5 wager on the meter: within the wager, but not the group's 10%.
            refused_by_the_ledger(
                table_role, "SELECT granted.contribute('pit', 'BAC-01', 'x', '{999}', '{h9}',"
                " '{progressive}', '{500}', '{1}', '{1}', '{500}', '{NULL}')", "LK007",
                r"linked contribution 999 of table BAC-01 refused: 500/1 cents is not the "
                r"group's rate 1/10 of its 500 cents of wagers on h9/progressive")
            refused_by_the_ledger(
                table_role, "SELECT * FROM granted.claim('pit', 'k', 'h9', 'progressive',"
                " 'BAC-01', 1, 1, 3, 2, NULL)", "LK004",
                r"linked claim k refused: a share of 3/2 of the meter: allowed: from 0 to 1")
            refused_by_the_ledger(
                table_role, "SELECT * FROM granted.claim('pit', 'BAC-02/1/1/h9/progressive',"
                " 'h9', 'progressive', 'BAC-02', 1, 1, 1, 1, NULL)", "LK005",
                r"linked ledger: login granted_t_bac_01 may not write for table BAC-02: its "
                r"administrator registers each table's login for its table id")
            # Another pit's meter: not paid into, claimed from or seeded by this login.
            other_pit = r"linked ledger: login granted_t_bac_01 may not write in group pit-b: " \
                r"its administrator registered it for group pit"
            for statement in (
                    "SELECT granted.seed_level('pit-b', 'h9', 'progressive', 100, '1/10')",
                    "SELECT granted.contribute('pit-b', 'BAC-01', 'x', '{999}', '{h9}',"
                    " '{progressive}', '{50}', '{1}', '{1}', '{500}', '{NULL}')",
                    "SELECT * FROM granted.claim('pit-b', 'BAC-01@x/1/1/h9/progressive', 'h9',"
                    " 'progressive', 'BAC-01', 1, 1, 1, 1, NULL)"):
                refused_by_the_ledger(table_role, statement, "LK005", other_pit)
        assert shared_amount(system) == H9_SEED + 3 * H9_PER_WAGER  # nothing moved
        with psycopg.connect(postgres.dsn, autocommit=True) as admin:  # who wrote each row
            assert admin.execute("SELECT table_id, sent_by FROM granted.contributions"
                                 ).fetchall() == [("BAC-01", "granted_t_bac_01")]
        unregistered = postgres.dsn.replace("user=postgres", "user=granted_t_bac_09")
        with psycopg.connect(unregistered, autocommit=True) as table_role:
            refused_by_the_ledger(
                table_role, "SELECT granted.seed_level('pit', 'h9', 'new', 99900000, '1/10')",
                "LK005",
                r"linked ledger: login granted_t_bac_09 is not registered for any table")
        stranger = postgres.dsn.replace("user=postgres", "user=granted_stranger")
        with psycopg.connect(stranger, autocommit=True) as outsider:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                outsider.execute("SELECT * FROM granted.claim('pit', 'k', 'h9',"
                                 " 'progressive', 'BAC-01', 1, 1, 1, 1, NULL)")
        assert system.verify() == []
    finally:
        close(system)


# The linked ledger release 0.2.0 made: no functions, no logins, contributions keyed
# (grp, table_id, seq); its tables' role wrote the meters itself.
LEDGER_0_2_0 = [
    "CREATE SCHEMA earlier",
    """CREATE TABLE earlier.levels (
        grp text NOT NULL, progressive text NOT NULL, level text NOT NULL,
        amount_cents bigint NOT NULL, frac_num bigint NOT NULL, frac_den bigint NOT NULL,
        seed_cents bigint NOT NULL, reset_cents bigint NOT NULL, version bigint NOT NULL,
        contributed text NOT NULL DEFAULT '0', awards_count bigint NOT NULL DEFAULT 0,
        awarded_cents bigint NOT NULL DEFAULT 0, PRIMARY KEY (grp, progressive, level))""",
    """CREATE TABLE earlier.contributions (
        grp text NOT NULL, table_id text NOT NULL, seq bigint NOT NULL,
        progressive text NOT NULL, level text NOT NULL,
        delta_num bigint NOT NULL, delta_den bigint NOT NULL,
        wagers_count integer NOT NULL, wagers_cents bigint NOT NULL, round_id bigint,
        received_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (grp, table_id, seq))""",
    """CREATE TABLE earlier.awards (
        grp text NOT NULL, claim_key text NOT NULL, progressive text NOT NULL,
        level text NOT NULL, table_id text NOT NULL, round_id bigint NOT NULL,
        seat integer NOT NULL, amount_cents bigint NOT NULL, reseed_cents bigint NOT NULL,
        reserve_level text, reserve_used text NOT NULL DEFAULT '0',
        level_version bigint NOT NULL, claimed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (grp, claim_key))""",
]


def test_605a_8_a_ledger_made_by_an_earlier_release_is_named_until_its_administrator_updates_it(
        tmp_path: Path, postgres: PrivatePostgres) -> None:
    """A ledger release 0.2.0 made has its tables but not its functions, and its tables'
    role held UPDATE on the levels. A table whose role may not create them offers no linked
    wager and says what to do; once the administrator applies the schema and the grants
    again it plays, the meters and rows it held are kept (under the store '' an earlier
    release's store keeps), and this table's new store's first row, numbered 1 as the old
    store's was, is counted, not taken for the old one re-sent."""
    import psycopg

    from controller.progressive.linked import schema_sql, table_grants_sql, table_login_sql

    with psycopg.connect(postgres.dsn, autocommit=True) as admin:
        for statement in [*LEDGER_0_2_0, "CREATE ROLE earlier_tables NOLOGIN",
                          "CREATE ROLE earlier_t_bac_02 LOGIN IN ROLE earlier_tables",
                          "GRANT USAGE ON SCHEMA earlier TO earlier_tables",
                          "GRANT SELECT, INSERT, UPDATE ON earlier.levels TO earlier_tables",
                          "GRANT SELECT, INSERT ON earlier.contributions, earlier.awards"
                          " TO earlier_tables",
                          # BAC-02's old store sent its round 1: three $5 wagers, 150 cents.
                          "INSERT INTO earlier.levels VALUES ('pit', 'h9', 'progressive',"
                          " 1000150, 0, 1, 1000000, 1000000, 2, '150')",
                          "INSERT INTO earlier.contributions(grp, table_id, seq, progressive,"
                          " level, delta_num, delta_den, wagers_count, wagers_cents, round_id)"
                          " VALUES ('pit', 'BAC-02', 1, 'h9', 'progressive', 150, 1, 3, 1500,"
                          " 1)"]:
            admin.execute(statement)
    dsn = postgres.dsn.replace("user=postgres", "user=earlier_t_bac_02")
    system = table(tmp_path, dsn, "BAC-02", "earlier")
    try:
        assert system.availability() == {"h9": (
            "linked ledger earlier was made by an earlier release (its functions are missing "
            "or older than this table's): its administrator applies the schema and the "
            "grants again (docs/deployment.md, 'A pit of tables')")}
        assert play_round(system, 1) == 0  # the linked wager is refused, the round plays
        with psycopg.connect(postgres.dsn, autocommit=True) as admin:
            for statement in [*schema_sql("earlier"),
                              "REVOKE ALL ON earlier.levels, earlier.contributions,"
                              " earlier.awards FROM earlier_tables",
                              *table_grants_sql("earlier", "earlier_tables"),
                              table_login_sql("earlier", "earlier_t_bac_02", "BAC-02", "pit")]:
                admin.execute(statement)
        system.sync()
        assert system.availability() == {"h9": None}
        assert play_round(system, 2) == 3
        assert shared_amount(system) == 1_000_150 + 3 * H9_PER_WAGER
        assert system.verify() == []
        with psycopg.connect(postgres.dsn, autocommit=True) as admin:
            assert admin.execute("SELECT store, seq, round_id FROM earlier.contributions"
                                 " ORDER BY round_id").fetchall() == [
                ("", 1, 1), (system.ledger.link_store(), 1, 2)]
            # The level 0.2.0 seeded takes the rate the first table of this release names.
            assert admin.execute("SELECT increment_rate FROM earlier.levels").fetchall() == [
                ("1/10",)]
    finally:
        close(system)


class Retained:
    """What a display connecting now is given: every message under a table's topics."""

    def __init__(self, port: int, pattern: str) -> None:
        import paho.mqtt.client as mqtt

        self.messages: dict[str, Any] = {}
        self._changed = threading.Condition()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.on_connect = lambda c, u, f, r, p=None: c.subscribe(pattern, qos=1)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        # Retained, or live if the table's publish reaches the broker after this subscribed
        # (a loaded machine): either way the display has it.
        if message.payload:
            with self._changed:
                self.messages[message.topic] = json.loads(message.payload)
                self._changed.notify_all()

    def wait_for(self, topics: set[str]) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: topics <= set(self.messages),
                                          DELIVERY_TIMEOUT_S)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def test_the_broker_restarted_costs_only_the_feed_and_the_tables_refill_it(
        tmp_path: Path) -> None:
    servers_or_skip()
    with PrivateBroker() as broker:
        cfg = config(HEAVENLY_9, name="h9", table_id="B1", extra={
            "mqtt": {"host": "127.0.0.1", "port": broker.port, "site": "restart"}})
        system = ProgressiveSystem.from_config(cfg, Store(tmp_path / "b1.sqlite"))
        publisher: Any = system.feeds.publisher
        try:
            assert publisher.wait_connected()
            status = {"table_id": "B1", "state": "betting_open", "shoe": {}, "round": {}}
            assert system.feed_pit(status)
            base_topic = "casino/restart/tables/B1"
            wanted = {f"{base_topic}/status", f"{base_topic}/alive",
                      f"{base_topic}/progressive/h9/progressive"}
            before = Retained(broker.port, f"{base_topic}/#")
            assert before.wait_for(wanted)
            before.close()
            broker.restart()  # without persistence: every retained message is gone
            deadline = time.monotonic() + DELIVERY_TIMEOUT_S
            while publisher.connections < 2 and time.monotonic() < deadline:
                time.sleep(0.05)  # paho reconnects by itself (1 s after the loss)
            assert publisher.connections == 2
            play_round(system, 1)  # money moves on while the feed is away or back
            system.feed_pit(status)  # the daemon's next look: a reconnect, so everything
            after = Retained(broker.port, f"{base_topic}/#")
            assert after.wait_for(wanted)
            assert after.messages[f"{base_topic}/alive"] == {"alive": "online",
                                                             "table_id": "B1"}
            assert after.messages[f"{base_topic}/progressive/h9/progressive"][
                "amount_cents"] == H9_SEED + 3 * 50
            assert after.messages[f"{base_topic}/status"]["state"] == "betting_open"
            after.close()
        finally:
            system.close()
            system.store.close()
