"""`tablectl replay`: deal recorded cards through the table's rules, with chosen wagers.

How a supervisor or a regulator settles a patron dispute: the cards of a round (a file, a
`tablectl simulate` record, or the round or shoe a table's store recorded) go through the
same deciders as the live table (controller/rules/replay.py), and the rounds come out in
the simulate format (docs/simulate-format.md), each recorded round beside what the table
settled. Documented in docs/technician-guide.md.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller.cli import exitcodes
from controller.cli.arg_types import whole
from controller.cli.output import fit  # every line of text fits the terminal
from controller.cli.storefile import copy_store, is_store_file, not_a_table_store
from controller.errors import shown
from controller.events import EventDecodeError, decode
from controller.events.records import CoverCard, ShoeLoaded
from controller.text_files import loads_json


def register(subparsers: Any) -> None:
    """Add `replay` to tablectl's parser."""
    p = subparsers.add_parser(
        "replay", help="deal recorded cards through the rules (settle a dispute)",
        description="Deal a sequence of cards through the table's rules, as the live table "
                    "would, and print the rounds in the simulate format "
                    "(docs/simulate-format.md). The cards come from a file (--cards: one card "
                    "a line, or simulate --json records) or from a table's store (--store "
                    "with --round or --shoe); a recorded round is compared with what the "
                    "table settled (exit 1 if they differ).")
    p.add_argument("config", metavar="CONFIG",
                   help="the table's configuration or Rules Submission (TOML)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--cards", metavar="FILE",
                        help="one card a line (K♠, KS, 10h; # comments), or the JSON lines "
                             "of tablectl simulate/replay --json")
    source.add_argument("--store", metavar="PATH", help="a table's store file (read from a "
                        "copy; the daemon may be running)")
    which = p.add_mutually_exclusive_group()
    # An id SQLite can hold: 10**20 raised OverflowError out of the store's query.
    which.add_argument("--round", type=whole(1, 10**12, "a round id"), metavar="ID",
                       help="with --store: the round with this id (tablectl rounds shows it)")
    which.add_argument("--shoe", type=whole(1, 10**12, "a shoe number"), metavar="N",
                       help="with --store: every live round of shoe N")
    p.add_argument("--wager", action="append", default=[], metavar="SEAT:WAGER:CENTS",
                   help="a wager placed before every round, e.g. 1:banker:2500 (repeat it); "
                        "default: the wagers recorded with each round, or for a card file "
                        "one unit of every wager offered at seat 1 as simulate places them")
    p.add_argument("--wagers", metavar="FILE", help="wagers from a file, one SEAT:WAGER:CENTS "
                                                    "a line")
    p.add_argument("--unit-cents", type=whole(1, 10**12, "cents"), default=10000,
                   help="the unit of the default wagers (default 10000)")
    p.add_argument("--burn", action="store_true",
                   help="the card file starts with the shoe's first card, exposed and burned "
                        "(631a.5(f), 681a.7(c)); default: it starts with a round's first card")
    p.add_argument("--meter", action="append", default=[], metavar="LEVEL=CENTS",
                   help="where a progressive meter stood before the first round, e.g. "
                        "minor=200000 (default: its reset)")
    p.add_argument("--json", action="store_true", help="one JSON object per round")
    p.add_argument("--out", metavar="FILE", help="also write the rounds to FILE as JSON lines")
    p.set_defaults(handler=cmd_replay)


def _fail(message: str, code: int = exitcodes.BAD_ARGUMENTS) -> int:
    print(f"tablectl replay: {message}", file=sys.stderr)
    return code


def cmd_replay(args: argparse.Namespace) -> int:
    from controller.cli.rules_commands import _load, simulated_progressive
    from controller.rules.replay import (
        IncompleteRound, Replayed, ReplayError, parse_wager, parse_wagers,
    )

    if args.store is None and (args.round is not None or args.shoe is not None):
        return _fail("--round and --shoe take their round from a table's store: give --store")
    if args.store is not None and args.round is None and args.shoe is None:
        return _fail("--store needs --round ID or --shoe N (which rounds to replay)")
    game = _load(args.config)
    if game is None:
        return exitcodes.BAD_CONFIGURATION
    try:
        meters = dict(_meter(text) for text in args.meter)
    except ValueError as exc:
        return _fail(str(exc))
    progressive = simulated_progressive(args.config, 0)
    if progressive is None:
        return exitcodes.BAD_CONFIGURATION
    if meters and not progressive:
        return _fail(f"--meter: {args.config} has no [progressive.<name>] section")
    try:
        for level, cents in meters.items():
            progressive.start_meter_at(level, cents)
    except KeyError as exc:
        return _fail(f"--meter: {exc.args[0]}")
    try:
        wagers = [parse_wager(text) for text in args.wager]
        if args.wagers:
            wagers += parse_wagers(_read(args.wagers).splitlines(), args.wagers)
        replayed = _replay(args, game, progressive or None, wagers or None)
    except IncompleteRound as exc:
        _print(args, [Replayed(r) for r in exc.records])  # the rounds that were complete
        return _fail(str(exc), exitcodes.FAILURE)
    except ReplayError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot read {exc.filename}: {exc.strerror}")
    return _print(args, replayed)


def _meter(text: str) -> tuple[str, int]:
    from controller.rules.replay import MAX_CENTS_DIGITS, MAX_WAGER_CHARS

    level, _, cents = (part.strip() for part in text.partition("="))
    if not (0 < len(level) <= MAX_WAGER_CHARS and cents.isdecimal()
            and len(cents) <= MAX_CENTS_DIGITS):
        raise ValueError(f"--meter {shown(text)}: expected LEVEL=CENTS, a level's name and "
                         f"at most {MAX_CENTS_DIGITS} digits, e.g. minor=200000")
    return level, int(cents)


def _read(path: str) -> str:
    from controller.rules.replay import ReplayError
    from controller.text_files import NotUtf8, read_utf8

    try:
        return read_utf8(path)
    except NotUtf8 as exc:
        raise ReplayError(f"{path}: {exc}; allowed: a text file in UTF-8") from None


def _replay(args: argparse.Namespace, game: Any, progressive: Any,
            wagers: list[Any] | None) -> list[Any]:
    from controller.rules.replay import (
        ReplayError, cards_from_lines, check_wagers, replay_cards, replay_rounds,
        rounds_from_simulate,
    )
    from controller.rules.simulate import SIM_SEAT, stake_cents
    from controller.rules.settlement import PlacedWager

    key = progressive.wager_key if progressive is not None else None
    if wagers is not None:
        check_wagers(game, wagers, key, "--wager")
    if args.store is not None:
        rounds = _store_rounds(args, progressive)
        for r in rounds:
            if wagers is None:
                check_wagers(game, r.wagers, key, r.source)
        return replay_rounds(game, rounds, progressive, wagers)
    lines = _read(args.cards).splitlines()
    if next((line for line in lines if line.strip()), "").lstrip().startswith("{"):
        rounds = rounds_from_simulate(lines, args.cards)
        if not rounds:
            raise ReplayError(f"{args.cards}: no live round in these records")
        for r in rounds:
            if wagers is None:
                check_wagers(game, r.wagers, key, r.source)
        return replay_rounds(game, rounds, progressive, wagers)
    cards = cards_from_lines(lines, args.cards)
    if not cards:
        raise ReplayError(f"{args.cards}: no card in it (one card a line, e.g. K♠ or KS)")
    if wagers is None:  # simulate's seat: one unit of every wager offered
        wagers = [PlacedWager(SIM_SEAT, k, stake_cents(game, k, args.unit_cents))
                  for k in game.wager_rules]
        if progressive is not None:
            wagers.append(PlacedWager(SIM_SEAT, key or "",
                                      progressive.stake_cents(args.unit_cents)))
    return replay_cards(game, cards, wagers, burn=args.burn, progressive=progressive)


def _store_rounds(args: argparse.Namespace, progressive: Any) -> list[Any]:
    """The recorded rounds from a copy of the store (the evidence is never opened)."""
    from controller.rules.replay import ReplayError, round_from_store
    from controller.rules.settlement import PlacedWager

    source = Path(args.store)
    if not is_store_file(source):
        raise ReplayError(f"no store file at {source}")
    with tempfile.TemporaryDirectory(prefix="tablectl-replay-") as tmp:
        copy = copy_store(source, Path(tmp))
        refused = not_a_table_store(copy)
        if refused is not None:
            raise ReplayError(refused.replace(str(copy), str(source)))
        db = sqlite3.connect(str(copy))
        db.row_factory = sqlite3.Row
        try:
            rows = [dict(r) for r in db.execute(
                "SELECT * FROM rounds WHERE " + ("round_id = ?" if args.round is not None
                                                  else "shoe_no = ? AND simulated = 0")
                + " ORDER BY round_id", (args.round if args.round is not None else args.shoe,))]
            covers = _covers(db)
            accepted = _progressive_wagers(db) if progressive is not None else {}
        finally:
            db.close()
    what = f"round id {args.round}" if args.round is not None else f"shoe {args.shoe}"
    if not rows:
        raise ReplayError(f"{source}: no {what} in this store (tablectl rounds lists them)")
    rounds = []
    for row in rows:
        if row["state"] == "open":
            raise ReplayError(f"{source}: round id {row['round_id']} is still open at the "
                              "table: replay it once it is settled or void")
        if row["simulated"]:
            raise ReplayError(f"{source}: round id {row['round_id']} is a 631a.15(d) "
                              "simulated round: no wager counts in it")
        mine = [PlacedWager(seat, progressive.wager_key, cents)
                for seat, cents in accepted.get(row["round_id"], [])]
        # The copy is read without the key: a damaged or edited row is named, not a traceback.
        try:
            for name in ("wagers", "cards", "settlements"):
                row[name] = loads_json(row[name]) if row[name] else []
            rounds.append(round_from_store(row, covers.get(row["shoe_no"]), mine))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ReplayError(
                f"{source}: round id {row['round_id']} cannot be read from the store "
                f"({type(exc).__name__}: {shown(str(exc))}); the store may be damaged or "
                f"edited: check it with 'tablectl events verify --store {source}'") from None
    return rounds


def _covers(db: sqlite3.Connection) -> dict[int, int]:
    """Each shoe's cover card: where it came out (the shoe's card index)."""
    from controller.rules.replay import ReplayError

    shoe, covers = 0, dict[int, int]()
    for kind, payload in db.execute("SELECT kind, payload FROM events WHERE kind IN "
                                    "('shoe_loaded', 'cover_card') ORDER BY seq"):
        try:
            record = decode(kind, loads_json(payload))
        except EventDecodeError as exc:
            raise ReplayError(f"the store's log: {exc}") from None
        except (ValueError, TypeError):  # not JSON, or not text: read without the key
            raise ReplayError(f"the store's log: a {kind} entry cannot be read; the store may "
                              "be damaged or edited: check it with 'tablectl events verify "
                              "--store'") from None
        if isinstance(record, ShoeLoaded):
            shoe = record.shoe_no
        elif isinstance(record, CoverCard):
            covers.setdefault(shoe, record.index)
    return covers


def _progressive_wagers(db: sqlite3.Connection) -> dict[int, list[tuple[int, int]]]:
    """The progressive wagers the system accepted at each round's lock."""
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "progressive_wagers" not in names:
        return {}
    out: dict[int, list[tuple[int, int]]] = {}
    for round_id, seat, cents in db.execute(
            "SELECT round_id, seat, amount_cents FROM progressive_wagers WHERE accepted = 1 "
            "ORDER BY round_id, seat"):
        out.setdefault(int(round_id), []).append((int(seat), int(cents)))
    return out


def replayed_as_recorded(args: argparse.Namespace) -> bool:
    """Whether the rounds were dealt with their recorded wagers (so compared with them)."""
    return not args.wager and not args.wagers


def _print(args: argparse.Namespace, replayed: Sequence[Any]) -> int:
    from controller.rules.simulate import human_line, signed_dollars

    try:
        out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115
    except OSError as exc:  # closed below
        return _fail(f"--out: cannot write {args.out}: {exc.strerror}")
    differ = 0
    try:
        for done in replayed:
            line = json.dumps(done.record, ensure_ascii=False)
            if out is not None:
                out.write(line + "\n")
            if args.json:
                print(line)
                continue
            print(fit(human_line(done.record)))
            for s in done.record["settlements"]:
                # The settlement's figures on one line, the rule that paid it under them.
                print(f"    seat {s['seat']:2d}  {s['wager']:<24} {s['amount_cents']:>9} cents  "
                      f"{s['outcome']:<4} {signed_dollars(s['net_cents']):>12}")
                print(fit(f"{' ' * 14}{s['label']} ({s['section']})"))
            if done.round is not None and done.round.recorded_state:
                if done.differences:
                    print(f"  DIFFERS from the table's record of {done.round.source}:")
                    for d in done.differences:
                        print(fit(f"    {d}"))
                elif replayed_as_recorded(args):
                    print(f"  the table settled {done.round.source} alike")
        differ = sum(1 for done in replayed if done.differences)
    finally:
        if out is not None:
            out.close()
    if args.json:
        for done in replayed:
            for d in done.differences:
                print(f"tablectl replay: {done.round.source}: {d}", file=sys.stderr)
    return exitcodes.FAILURE if differ else exitcodes.OK
