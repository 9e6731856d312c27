"""`tablectl linked reconcile`: a table's store against the shared ledger (605a.8, rulings P6
and P7), against the real PostgreSQL on 127.0.0.1:5432.

A table whose box is in the wrong hands can still write rows in its own name through the
ledger's functions; the store's hash chain says what the table really took. Each test
plays a table, changes one side as an attacker or a fault would, and reads the verdict.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli import exitcodes, main
from controller.memory.lifecycle import init_store
from controller.progressive.system import ProgressiveSystem
from drivers.protocols import LockedOut
from tests.progressive.conftest import (
    PG_DSN, PG_HOST, PG_PORT, base, close, package_required, service_required, view,
)
from tests.progressive.test_linked import BAD_DSN, H9_SEED

SUITED_NINES = view("2S 3S 4S", "AS 4S 4S")  # 631c.2(g)(1): pays 100% of the meter
GROUP = "floor-r"


@pytest.fixture
def schema() -> Iterator[str]:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    package_required("psycopg", "the linked ledger's client")
    import psycopg

    name = f"tabled_rec_{secrets.token_hex(6)}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        yield name
        admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def _config(tmp_path: Path, schema: str, table_id: str = "T-REC", dsn: str = PG_DSN) -> Path:
    path = tmp_path / f"{table_id}.toml"
    path.write_text(f"""[table]
id = "{table_id}"
seats = 14

[progressive.h9]
game = "heavenly_9"
linked = true

[linked]
dsn = "{dsn}"
schema = "{schema}"
group = "{GROUP}"
""", encoding="utf-8")
    return path


def _table(tmp_path: Path, schema: str, table_id: str = "T-REC") -> ProgressiveSystem:
    from controller.progressive.config import load_progressive_config

    config = load_progressive_config(str(_config(tmp_path, schema, table_id)))
    # As tabled makes a store: its first record names the table.
    store = init_store(str(tmp_path / f"{table_id}.sqlite"), operator="test", table_id=table_id)
    return ProgressiveSystem.from_config(config, store)


def _play(system: ProgressiveSystem, rounds: int, *, hit_round: int | None = None) -> None:
    for round_id in range(1, rounds + 1):
        system.on_lock(LockedOut("button", 0.0, frozenset({1, 5})), base([1, 5]), round_id)
        if round_id == hit_round:
            system.on_round_result(round_id, SUITED_NINES, [])
    system.sync()


def _reconcile(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["linked", "reconcile", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_605a_8_a_table_that_played_honestly_reconciles_row_for_row(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    system = _table(tmp_path, schema)
    _play(system, 4, hit_round=3)
    name = system.ledger.link_store()
    close(system)
    code, out, _ = _reconcile(capsys, str(tmp_path / "T-REC.toml"),
                              "--store", str(tmp_path / "T-REC.sqlite"))
    assert code == exitcodes.OK
    assert out.splitlines() == [
        f"Linked ledger reconciliation: table T-REC, store {name}, group {GROUP}",
        "contributions: 4 on both, the same; 0 not sent yet",
        "awards: 2 on both, the same; 0 not claimed or not recorded yet",
        "findings: none"]


def _two_rounds_played(tmp_path: Path, schema: str) -> str:
    """T-REC plays two rounds, two wagers each, and stops; its store's name on the ledger."""
    system = _table(tmp_path, schema)
    _play(system, 2)
    name = system.ledger.link_store()
    close(system)
    return name


def _findings_after_two_rounds(capsys: pytest.CaptureFixture[str], tmp_path: Path
                               ) -> list[str]:
    """T-REC's reconciliation after `_two_rounds_played` and a forger's rows: exit 5, both
    rounds' rows matched; the report's findings lines."""
    code, out, _ = _reconcile(capsys, str(tmp_path / "T-REC.toml"),
                              "--store", str(tmp_path / "T-REC.sqlite"))
    assert code == exitcodes.INTEGRITY_FAILURE
    lines = out.splitlines()
    assert lines[1:3] == ["contributions: 2 on both, the same; 0 not sent yet",
                          "awards: 0 on both, the same; 0 not claimed or not recorded yet"]
    return lines[3:]


def test_605a_8_rows_a_table_login_wrote_in_its_own_name_are_found(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    """What ruling P6 leaves a compromised table: contributions for wagers it never took
    and a hit it never had, written through the functions in its own name. The ledger takes
    both (they are within its rules); the reconciliation names each, with its login."""
    import psycopg

    name = _two_rounds_played(tmp_path, schema)
    with psycopg.connect(PG_DSN, autocommit=True) as forger:
        forger.execute(f"SELECT {schema}.contribute(%s, 'T-REC', %s, '{{3}}', '{{h9}}',"
                       " '{progressive}', '{50}', '{1}', '{1}', '{500}', '{9}')",
                       (GROUP, name))
        forger.execute(f"SELECT * FROM {schema}.claim(%s, %s, 'h9', 'progressive', 'T-REC',"
                       " 9, 7, 1, 1, NULL)", (GROUP, f"T-REC@{name}/9/7/h9/progressive"))
    assert _findings_after_two_rounds(capsys, tmp_path) == [
        "findings: 2",
        "  contribution 3 on the ledger (h9/progressive 50 cents from 1 wagers of 500 cents,"
        " round 9; sent by postgres) is not in this store",
        f"  award T-REC@{name}/9/7/h9/progressive on the ledger ({H9_SEED + 250} cents;"
        " claimed by postgres) is not in this store"]


def test_605a_8_rows_of_the_table_in_another_group_are_found(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A table plays one group; its login may still write under its table id in another
    pit's group (a contribution to that meter, a hit claimed from it). The store does not
    say which group a row went to, so those rows were outside the comparison, which read
    the configuration's group only: they are findings, counted by group with their login
    (before: 'findings: none', exit 0)."""
    import psycopg

    name = _two_rounds_played(tmp_path, schema)
    with psycopg.connect(PG_DSN, autocommit=True) as forger:
        forger.execute(f"SELECT {schema}.seed_level('pit-b', 'h9', 'progressive', 100000,"
                       " '1/10')")
        forger.execute(f"SELECT {schema}.contribute('pit-b', 'T-REC', %s, '{{1}}', '{{h9}}',"
                       " '{progressive}', '{50}', '{1}', '{1}', '{500}', '{9}')", (name,))
        forger.execute(f"SELECT * FROM {schema}.claim('pit-b', %s, 'h9', 'progressive',"
                       " 'T-REC', 9, 7, 1, 1, NULL)", (f"T-REC@{name}/9/7/h9/progressive",))
    assert _findings_after_two_rounds(capsys, tmp_path) == [
        "findings: 1",
        "  the ledger holds 1 contributions and 1 awards of table T-REC in group pit-b "
        f"(written by postgres), which this table does not play (its group is {GROUP})"]


def test_605a_8_a_row_lost_or_changed_on_the_ledger_and_rows_not_sent_yet(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The other way round: a row the table holds as acknowledged but the ledger lost, and
    one the ledger holds with another share, are findings; rows the table could not send
    yet (its link down) are pending, not findings. --json gives the same."""
    import psycopg

    system = _table(tmp_path, schema)
    _play(system, 3)
    assert system.linked is not None
    system.linked.dsn = BAD_DSN  # the link goes down: round 4's row stays in the outbox
    system.linked.close()
    system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 4)
    name = system.ledger.link_store()
    close(system)
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"DELETE FROM {schema}.contributions WHERE seq = 1")
        admin.execute(f"UPDATE {schema}.contributions SET delta_num = 7 WHERE seq = 2")
    code, out, _ = _reconcile(capsys, str(tmp_path / "T-REC.toml"),
                              "--store", str(tmp_path / "T-REC.sqlite"), "--json")
    assert code == exitcodes.INTEGRITY_FAILURE
    assert json.loads(out) == {
        "table_id": "T-REC", "store": name, "group": GROUP, "contributions_matched": 1,
        "contributions_pending": [4], "awards_matched": 0, "awards_pending": [],
        "other_stores": {},
        "findings": [
            "contribution 1 (h9/progressive 100 cents from 2 wagers of 1000 cents, round 1)"
            " was acknowledged at the table but is not on the ledger",
            "contribution 2 differs: the ledger holds h9/progressive 7 cents from 2 wagers of"
            " 1000 cents, round 2 (sent by postgres), the store h9/progressive 100 cents from"
            " 2 wagers of 1000 cents, round 2"]}


def test_605a_8_a_replaced_stores_rows_are_its_own_and_the_old_ones_counted_apart(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    old_card, new_card = tmp_path / "old", tmp_path / "new"
    old_card.mkdir(), new_card.mkdir()
    old = _table(old_card, schema)
    _play(old, 3)
    old_name = old.ledger.link_store()
    close(old)
    new = _table(new_card, schema)
    _play(new, 1)
    close(new)
    code, out, _ = _reconcile(capsys, str(new_card / "T-REC.toml"),
                              "--store", str(new_card / "T-REC.sqlite"))
    assert code == exitcodes.OK
    lines = out.splitlines()
    assert lines[1] == "contributions: 1 on both, the same; 0 not sent yet"
    assert lines[3] == (f"this table's other stores on the ledger (contributions): "
                        f"{old_name} (3): reconcile each with its own store")


def test_605a_8_two_stores_of_one_table_sending_at_once_are_found(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A store replaced stops before its successor starts. Two boxes playing as one table at
    the same time (a copy of the table's box with a store of its own, or two tables given
    one id) each sent rows that their own store accounts for, so each reconciled clean, the
    other counted apart; the overlap is the finding, from either store (before: exit 0)."""
    first_box, second_box = tmp_path / "first", tmp_path / "second"
    first_box.mkdir(), second_box.mkdir()
    first = _table(first_box, schema)
    second = _table(second_box, schema)
    try:
        _play(first, 2)
        _play(second, 1)
        first.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 3)
        first.sync()
        names = first.ledger.link_store(), second.ledger.link_store()
    finally:
        close(first)
        close(second)
    moment = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d"
    for box, other in ((first_box, names[1]), (second_box, names[0])):
        code, out, _ = _reconcile(capsys, str(box / "T-REC.toml"),
                                  "--store", str(box / "T-REC.sqlite"))
        assert code == exitcodes.INTEGRITY_FAILURE
        findings = out.splitlines()[-2:]
        assert findings[0] == "findings: 1"
        assert re.fullmatch(
            rf"  store {other} of table T-REC sent contributions from {moment} to {moment}, "
            rf"while this store sent its own \({moment} to {moment}\): two boxes played as "
            r"this table at once \(a copy of this one, or two tables configured with one "
            r"id\)", findings[1]), findings[1]


def test_bad_inputs_are_named_with_their_exit_codes(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    system = _table(tmp_path, schema)
    _play(system, 1)
    close(system)
    config, store = str(tmp_path / "T-REC.toml"), str(tmp_path / "T-REC.sqlite")
    other = _config(tmp_path, schema, "T-OTHER")
    (tmp_path / "down").mkdir()
    unreachable = _config(tmp_path / "down", schema, dsn=BAD_DSN)
    (tmp_path / "elsewhere").mkdir()
    no_ledger = _config(tmp_path / "elsewhere", "tabled_no_such_ledger")
    cases: list[tuple[list[str], int, str]] = [
        ([str(other), "--store", store], exitcodes.BAD_ARGUMENTS,
         f"tablectl linked reconcile: {store} is table T-REC's store, {other} table "
         "T-OTHER's configuration"),
        ([config, "--store", str(tmp_path / "missing.sqlite")], exitcodes.BAD_ARGUMENTS,
         f"tablectl linked reconcile: no store file at {tmp_path / 'missing.sqlite'}"),
        ([config, "--store", config], exitcodes.BAD_ARGUMENTS,
         f"tablectl linked reconcile: {config} is not a table store: it is not an SQLite "
         "database"),
        ([str(unreachable), "--store", store], exitcodes.UNREACHABLE,
         f"tablectl linked reconcile: the linked ledger {schema} could not be read: "
         "OperationalError: "),
        ([str(no_ledger), "--store", store], exitcodes.UNREACHABLE,
         "tablectl linked reconcile: the linked ledger tabled_no_such_ledger could not be "
         "read: UndefinedTable: relation \"tabled_no_such_ledger.contributions\" does not "
         "exist"),
        ([config, "--store", store, "--dsn", BAD_DSN], exitcodes.UNREACHABLE,
         f"tablectl linked reconcile: the linked ledger {schema} could not be read: "
         "OperationalError: "),
    ]
    for argv, expected_code, message in cases:
        code, out, err = _reconcile(capsys, *argv)
        assert (code, out) == (expected_code, ""), argv
        assert " ".join(err.split()).startswith(message), (argv, err)
    no_linked = tmp_path / "plain.toml"
    no_linked.write_text('[table]\nid = "T-REC"\nseats = 14\n', encoding="utf-8")
    code, _, err = _reconcile(capsys, str(no_linked), "--store", store)
    assert code == exitcodes.BAD_CONFIGURATION
    assert " ".join(err.split()) == (f"tablectl linked reconcile: {no_linked} has no [linked]"
                                     " section: the table offers no linked progressive (605a.8)")


def test_605a_8_a_store_that_never_spoke_to_the_ledger_has_no_rows_of_its_own(
        tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A table's new store, before its first linked wager: the ledger's rows of the table
    are all its earlier stores', counted apart, and nothing is a finding."""
    played, fresh = tmp_path / "played", tmp_path / "fresh"
    played.mkdir(), fresh.mkdir()
    old = _table(played, schema)
    _play(old, 2)
    old_name = old.ledger.link_store()
    close(old)
    init_store(str(fresh / "T-REC.sqlite"), operator="test", table_id="T-REC").close()
    code, out, _ = _reconcile(capsys, str(_config(fresh, schema)),
                              "--store", str(fresh / "T-REC.sqlite"))
    assert code == exitcodes.OK
    assert out.splitlines() == [
        f"Linked ledger reconciliation: table T-REC, store none (it never sent the ledger a "
        f"row), group {GROUP}",
        "contributions: 0 on both, the same; 0 not sent yet",
        "awards: 0 on both, the same; 0 not claimed or not recorded yet",
        f"this table's other stores on the ledger (contributions): {old_name} (2): reconcile "
        "each with its own store",
        "findings: none"]
