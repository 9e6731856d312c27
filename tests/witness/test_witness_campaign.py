"""The key-holder's campaign: every attack of someone who holds the table's box, each of
which the store's own check passes, against a witnessed table. Each must be caught at the
next boot (the table out of order, the finding named) or refused outright.

    TABLE_WITNESS_CAMPAIGN_SEEDS=10 ./run-tests tests/witness/test_witness_campaign.py -s

A seed decides how long the table plays before the copy an attack puts back is taken, how
long after it, which log entry a rewrite starts at and which seat's money is changed; the
campaign prints its seed, its cases and its counts. (The edits of the store without the key
are the tamper campaign's, tests/controller/test_tamper.py; the four WAL rollbacks and a
rollback taken a few seconds before a power cut while callers read are in
tests/controller/test_anchor_readers.py.)
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from controller.memory.lifecycle import EXIT_STORE, open_store
from controller.progressive.ledger import PAID, VALIDATED, MeterLedger
from controller.witness.server import apply_setup
from hil.witness_sim import drop_witness
from tests.progressive.conftest import PG_DSN, PG_HOST, PG_PORT, service_required
from tests.settled import banker_wager
from tests.witness.conftest import WitnessDb
from tests.witness.test_witness_daemon import (
    boot_status,
    init_store,
    play,
    reseal_with_key,
    witnessed_config,
)

SEEDS = int(os.environ.get("TABLE_WITNESS_CAMPAIGN_SEEDS", "1"))
FIRST_SEED = int(os.environ.get("TABLE_WITNESS_CAMPAIGN_SEED", "20261126"))

Attack = Callable[[Path, Any, random.Random, pytest.MonkeyPatch], Awaitable[str]]


def _copy(tmp_path: Path, names: tuple[str, ...]) -> Path:
    copy = tmp_path / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir()
    for name in names:
        source = tmp_path / name
        if source.is_dir():
            shutil.copytree(source, copy / name)
        elif source.exists():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    return copy


def _put_back(tmp_path: Path, copy: Path, names: tuple[str, ...]) -> None:
    for name in ("table.sqlite-wal", "table.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    for name in names:
        target, source = tmp_path / name, copy / name
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
        elif source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


async def _plays(config: Any, count: int) -> None:
    for _ in range(count):
        await play(config)


async def store_and_anchor_put_back(tmp_path: Path, config: Any, rng: random.Random,
                                    monkeypatch: pytest.MonkeyPatch) -> str:
    names = ("table.sqlite", "table.sqlite-wal", "table.critical/anchor")
    copy = _copy(tmp_path, names)
    await _plays(config, rng.randint(1, 3))
    _put_back(tmp_path, copy, names)
    return "witness: store behind: "


async def whole_critical_directory_put_back(tmp_path: Path, config: Any, rng: random.Random,
                                            monkeypatch: pytest.MonkeyPatch) -> str:
    names = ("table.sqlite", "table.sqlite-wal", "table.critical")
    copy = _copy(tmp_path, names)
    await _plays(config, rng.randint(1, 3))
    _put_back(tmp_path, copy, names)
    return "witness: store behind: "


async def money_resealed_with_the_key(tmp_path: Path, config: Any, rng: random.Random,
                                      monkeypatch: pytest.MonkeyPatch) -> str:
    """A losing seat made a winner: its total credited $1,000.00 and re-sealed."""
    seat = rng.randint(1, 14)
    reseal_with_key(tmp_path / "table.sqlite",
                    "INSERT INTO seat_totals(seat, net_cents, wagered_cents, vig_owed_cents) "
                    "VALUES (?, 100000, 0, 0) ON CONFLICT(seat) DO UPDATE SET "
                    "net_cents = net_cents + 100000", (seat,))
    return "witness: money diverges: "


async def paid_award_set_back_to_pending(tmp_path: Path, config: Any, rng: random.Random,
                                         monkeypatch: pytest.MonkeyPatch) -> str:
    """A $10,000.50 award paid (written while the daemon was down, then witnessed with the
    next play's heads), set back to pending with the key: it could be validated and paid a
    second time."""
    store = open_store(config.store_path)
    ledger = MeterLedger(store)
    rid = store.open_round(1, 1, [{"seat": 3, "wager": "banker", "amount_cents": 2500}])
    with store.transaction():
        ledger.seed("h9", "grand", 1_000_000, Fraction(1, 10))
        award = ledger.create_award("h9", "grand", rid, 3, 1_000_050, "Grand", "631c.6", 1)
        ledger.advance_award(award.award_id, VALIDATED, supervisor="floor")
        ledger.advance_award(award.award_id, PAID, paid_via="system")
    store.close()
    await play(config)  # the paid award is in the money the witness holds
    reseal_with_key(tmp_path / "table.sqlite", "UPDATE progressive_awards SET state = "
                    "'pending', validated_by = NULL, validated_at = NULL, paid_via = NULL, "
                    "paid_at = NULL WHERE award_id = ?", (award.award_id,))
    return "witness: money diverges: "


async def settlement_resealed_with_the_key(tmp_path: Path, config: Any, rng: random.Random,
                                           monkeypatch: pytest.MonkeyPatch) -> str:
    """A settled round's record made to show a losing Banker wager as won (-$25.00 to
    +$23.75), its row re-sealed with the key: the recall a dispute is settled from."""
    store = open_store(config.store_path)
    rid = store.open_round(1, 1, [{"seat": 3, "wager": "banker", "amount_cents": 2500}])
    store.close_round(rid, "settled", {"winner": "player"},
                      [banker_wager(3, 2500, -2500)],
                      [{"index": 0, "card": "9H", "hand": "player"}])
    store.close()
    await play(config)  # the settled round is in what the witness holds
    reseal_with_key(tmp_path / "table.sqlite", "UPDATE rounds SET settlements = ? WHERE "
                    "round_id = ?", ('[{"amount_cents":2500,"net_cents":2375,"seat":3,'
                                     '"wager":"banker"}]', rid))
    return "witness: money diverges: "


async def log_rewritten_with_the_key(tmp_path: Path, config: Any, rng: random.Random,
                                     monkeypatch: pytest.MonkeyPatch) -> str:
    store = tmp_path / "table.sqlite"
    last = int(sqlite3.connect(store).execute("SELECT MAX(seq) FROM events").fetchone()[0])
    edited = rng.randint(2, last - 1)
    reseal_with_key(store, "UPDATE events SET payload = json_set(payload, '$.forged', 1) "
                    "WHERE seq = ?", (edited,), rewrite_from=edited)
    return "witness: log rewritten: "


async def fresh_store_without_a_supervisor(tmp_path: Path, config: Any, rng: random.Random,
                                           monkeypatch: pytest.MonkeyPatch) -> str:
    """The files moved away and `tabled --init-store` run with no supervisor: refused, and
    no store is made (the table stays without one, so it cannot open either)."""
    moved = tmp_path / "moved-away"
    moved.mkdir()
    for name in ("table.sqlite", "table.sqlite-wal", "table.critical"):
        if (tmp_path / name).exists():
            shutil.move(tmp_path / name, moved / name)
    assert init_store(config, monkeypatch) == EXIT_STORE
    assert not (tmp_path / "table.sqlite").exists()
    return "refused"


ATTACKS: dict[str, Attack] = {
    "store and anchor put back": store_and_anchor_put_back,
    "whole table.critical/ put back": whole_critical_directory_put_back,
    "money re-sealed with the key": money_resealed_with_the_key,
    "paid award set back to pending with the key": paid_award_set_back_to_pending,
    "settlement re-sealed with the key": settlement_resealed_with_the_key,
    "log entry rewritten with the key": log_rewritten_with_the_key,
    "fresh --init-store without a supervisor": fresh_store_without_a_supervisor,
}


@pytest.mark.parametrize("seed", [FIRST_SEED + n for n in range(SEEDS)])
async def test_every_key_holders_attack_is_caught_at_boot_and_named(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        seed: int) -> None:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    rng = random.Random(seed)
    caught: Counter[str] = Counter()
    findings: dict[str, str] = {}
    for number, (name, attack) in enumerate(ATTACKS.items()):
        tmp_path = tmp_path_factory.mktemp(f"attack{number}")
        witness_db = WitnessDb(PG_DSN, f"wt_{secrets.token_hex(5)}")  # a witness each
        apply_setup(witness_db.admin_dsn, witness_db.schema)
        try:
            config = witnessed_config(tmp_path, witness_db)
            assert init_store(config, monkeypatch) == 0
            await _plays(config, rng.randint(1, 3))
            expected = await attack(tmp_path, config, rng, monkeypatch)
            if expected == "refused":
                findings[name] = "init refused: the witness already knows the table"
            else:
                status = await boot_status(config)
                assert status["state"] == "out_of_order", (name, status)
                assert status["out_of_order"].startswith(expected), (
                    name, status["out_of_order"])
                assert status["open_refused"] == "not allowed while the table is out_of_order"
                findings[name] = status["out_of_order"][:100]
            caught[name] += 1
        finally:
            drop_witness(witness_db.admin_dsn, witness_db.schema, witness_db.table_roles)
    print(f"\nkey-holder campaign, seed {seed}: {sum(caught.values())} of {len(ATTACKS)} "
          "attacks caught at boot or refused")
    for name, finding in findings.items():
        print(f"  {name}: {finding}")
    assert caught == Counter({name: 1 for name in ATTACKS})
