"""The rounds table and the seat totals, on the store's connection: a round's row opened,
closed once with its cards and settlements, and read back as readers see it (an open
round's cards so far come from the table's saved state and the log, not its row)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controller.events.codec import Payload
from controller.events.records import SettledWager
from controller.memory.critical import StoreError, canonical
from controller.memory.part_texts import parts_json, value_json
from controller.memory.schema import OPEN_ROUND_CARDS, SAVED_AT_SEQ


def saved_table_state(db: sqlite3.Connection) -> tuple[str, dict[str, Any]] | None:
    row = db.execute("SELECT state, data FROM table_state WHERE id = 1").fetchone()
    return (row[0], json.loads(row[1])) if row else None


def open_round(db: sqlite3.Connection, shoe_no: int, round_no: int,
               wagers: Sequence[Mapping[str, Any] | Payload], simulated: bool,
               at: float) -> int:
    cursor = db.execute(
        "INSERT INTO rounds(shoe_no, round_no, state, simulated, wagers, cards, opened_at)"
        " VALUES (?, ?, 'open', ?, ?, '[]', ?)",
        (shoe_no, round_no, int(simulated), parts_json(wagers), at),
    )
    return int(cursor.lastrowid or 0)


def close_round(db: sqlite3.Connection, round_id: int, state: str,
                result: Mapping[str, Any] | Payload | None, settlements: Sequence[SettledWager],
                cards: Sequence[Mapping[str, Any]], at: float) -> None:
    """The round's texts are canonical JSON; its settlements' and its result's are the
    kept texts their log entries wrote (controller/memory/part_texts.py)."""
    cursor = db.execute(
        "UPDATE rounds SET state = ?, result = ?, settlements = ?, cards = ?,"
        " settled_at = ? WHERE round_id = ? AND state = 'open'",
        (state, value_json(result) if result is not None else None,
         parts_json(settlements), canonical(list(cards)), at, round_id),
    )
    if cursor.rowcount != 1:
        raise StoreError(f"round {round_id} is not open: it cannot be closed twice")
    # One row per seat: each row written fires its digest trigger (a row's MAC out and
    # in), so a seat with several wagers is written once, its wagers summed, not once a
    # wager. The rows left are the same, and so is the digest: the sum of their MACs.
    db.executemany(  # one statement for every seat's totals
        "INSERT INTO seat_totals(seat, net_cents, wagered_cents, vig_owed_cents)"
        " VALUES (?, ?, ?, ?) ON CONFLICT(seat) DO UPDATE SET"
        " net_cents = net_cents + excluded.net_cents,"
        " wagered_cents = wagered_cents + excluded.wagered_cents,"
        " vig_owed_cents = vig_owed_cents + excluded.vig_owed_cents", _per_seat(settlements))


def _per_seat(settlements: Iterable[SettledWager]) -> list[tuple[int, int, int, int]]:
    """(seat, net, wagered, vigorish owed) summed per seat, seats in their first order."""
    totals: dict[int, tuple[int, int, int, int]] = {}
    for item in settlements:
        _, net, wagered, vig = totals.get(item.seat, (item.seat, 0, 0, 0))
        totals[item.seat] = (item.seat, net + item.net_cents, wagered + item.amount_cents,
                             vig + item.vig_marked_cents)
    return list(totals.values())


def rounds(db: sqlite3.Connection, limit: int, after_round_id: int | None
           ) -> list[dict[str, Any]]:
    if after_round_id is not None:
        rows = db.execute("SELECT * FROM rounds WHERE round_id > ? ORDER BY round_id LIMIT ?",
                          (after_round_id, limit)).fetchall()
    else:
        rows = db.execute("SELECT * FROM (SELECT * FROM rounds ORDER BY round_id DESC LIMIT ?)"
                          " ORDER BY round_id", (limit,)).fetchall()
    return as_read(db, rows)


def one_round(db: sqlite3.Connection, round_id: int) -> dict[str, Any] | None:
    row = db.execute("SELECT * FROM rounds WHERE round_id = ?", (round_id,)).fetchone()
    return as_read(db, [row])[0] if row else None


def open_rounds(db: sqlite3.Connection) -> list[dict[str, Any]]:
    return as_read(db, db.execute("SELECT * FROM rounds WHERE state = 'open' ORDER BY round_id"))


def as_read(db: sqlite3.Connection, rows: Iterable[sqlite3.Row]) -> list[dict[str, Any]]:
    """Rounds as readers see them: an open round's cards so far are the table's saved
    state's and those logged after it (the row gets them when the round closes)."""
    found = [_round(row) for row in rows]
    still_open = [r for r in found if r["state"] == "open"]
    saved = saved_table_state(db) if still_open else None
    state = saved[1] if saved else {}
    for record in still_open:
        if record["round_id"] == state.get("round_id") and OPEN_ROUND_CARDS in state:
            record["cards"] = open_round_cards(db, state)
    return found


def open_round_cards(db: sqlite3.Connection, state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The open round's cards: those saved with the table's state, then the round's
    card entries logged after it (SAVED_AT_SEQ), in the order they were dealt."""
    return list(state[OPEN_ROUND_CARDS]) + [
        {"index": logged["index"], "card": logged["card"], "hand": logged["hand"],
         "slot": logged["slot"]}
        for logged in _logged_after(db, state, "card", round_id=state["round_id"])]


def logged_after_saved_state(db: sqlite3.Connection, kind: str) -> list[dict[str, Any]]:
    """Entries of `kind` after the saved state's SAVED_AT_SEQ (none without a saved state,
    or for one saved by a version that saved the state at every such step)."""
    saved = saved_table_state(db)
    return _logged_after(db, saved[1], kind) if saved is not None else []


def _logged_after(db: sqlite3.Connection, state: Mapping[str, Any], kind: str, *,
                  round_id: int | None = None) -> list[dict[str, Any]]:
    """The payloads of `kind`'s entries (of `round_id`'s, if given) logged after `state`
    was saved, oldest first; none for a state saved by a version that saved it at each
    such step (no SAVED_AT_SEQ)."""
    after = state.get(SAVED_AT_SEQ)
    if after is None:
        return []
    sql = "SELECT payload FROM events WHERE seq > ? AND kind = ?"
    args: tuple[Any, ...] = (after, kind)
    if round_id is not None:
        sql, args = sql + " AND round_id = ?", (*args, round_id)
    return [json.loads(row[0]) for row in db.execute(sql + " ORDER BY seq", args)]


def _round(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "round_id": row["round_id"], "shoe_no": row["shoe_no"], "round_no": row["round_no"],
        "state": row["state"], "simulated": bool(row["simulated"]),
        "wagers": json.loads(row["wagers"]), "cards": json.loads(row["cards"]),
        "result": json.loads(row["result"]) if row["result"] else None,
        "settlements": json.loads(row["settlements"]) if row["settlements"] else [],
        "opened_at": row["opened_at"], "settled_at": row["settled_at"],
    }


def seat_totals(db: sqlite3.Connection) -> dict[int, dict[str, int]]:
    return {
        row["seat"]: {"net_cents": row["net_cents"], "wagered_cents": row["wagered_cents"],
                      "vig_owed_cents": row["vig_owed_cents"]}
        for row in db.execute("SELECT * FROM seat_totals ORDER BY seat")
    }


def save_table_state(db: sqlite3.Connection, state: str, data_json: str) -> None:
    db.execute("INSERT INTO table_state(id, state, data) VALUES (1, ?, ?)"
               " ON CONFLICT(id) DO UPDATE SET state = excluded.state, data = excluded.data",
               (state, data_json))


def collect_vigorish(db: sqlite3.Connection, seat: int) -> int:
    """631a.13(d)(2): the seat's marked vigorish, taken off what it owes; the cents taken."""
    row = db.execute("SELECT vig_owed_cents FROM seat_totals WHERE seat = ?", (seat,)).fetchone()
    owed = int(row["vig_owed_cents"]) if row else 0
    if owed:
        db.execute("UPDATE seat_totals SET vig_owed_cents = 0, net_cents = net_cents - ?"
                   " WHERE seat = ?", (owed, seat))
    return owed
