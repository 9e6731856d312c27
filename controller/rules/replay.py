"""Replay recorded cards through the rules (`tablectl replay`): how a dispute is settled.

A sequence of cards, or rounds as a table's store or `tablectl simulate` recorded them, is
dealt by `controller.rules.dealing.ShoeDealing`, which asks the same deciders in the same
order as the live table (tests/controller/test_differential.py), with the wagers given or
the ones recorded, and gives round records in the simulate format (docs/simulate-format.md).
A recorded round brings the table's settlements, so the replay says whether it settles them
alike. Everything here is pure: the CLI (controller/cli/replay_command.py) reads the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from cards import Card
from controller.errors import RulesError, shown
from controller.rules.dealing import Action, Bet, Cover, Draw, RoundProgressive, ShoeDealing
from controller.rules.game import Game
from controller.rules.procedure import (
    BASE_WAGERS, BASE_WAGERS_21, Phase, base_wager_missing,
)
from controller.rules.settlement import PlacedWager, check_wager
from controller.text_files import loads_json

WAGER_FORM = "SEAT:WAGER:CENTS, e.g. 1:banker:2500"
MAX_SEAT_DIGITS = 3  # a table has at most a few dozen seats
MAX_CENTS_DIGITS = 12  # $10 billion: beyond any table's limit, within any int
MAX_WAGER_CHARS = 64  # a wager's name (banker, dragon_bonus) is a word
# What a replayed round is compared on with the table's record: the money of each wager.
COMPARED = ("seat", "wager", "amount_cents", "outcome", "win_cents", "vigorish_cents")
# The hands of the simulate format whose cards belong to a round (a burn, discard or lost
# card is in no round: docs/simulate-format.md).
ROUND_HANDS = ("player", "banker", "extra")


class ReplayError(RulesError):
    """Input the replay cannot deal: names where, what was wrong and what is allowed."""


@dataclass(frozen=True)
class RecordedRound:
    """One round as a table or `simulate` recorded it: its cards in dealing order with the
    shoe's indexes (a gap is a card the table never saw, ruling C7), the wagers on it, and
    the table's settlements to compare with (empty when there is no record)."""

    shoe_no: int
    round_no: int
    cards: tuple[tuple[int, Card], ...]
    wagers: tuple[PlacedWager, ...]
    cover_before: int | None = None  # the cover card came out before this index (631a.10(d))
    last_hand: bool = False  # dealt after "last hand" (631a.10(d))
    recorded: tuple[Mapping[str, Any], ...] = ()
    recorded_state: str = ""  # "settled" or "void" at the table; "" without a record
    source: str = ""  # where it came from, for messages: "round 12 of shoe 3 (id 40)"


@dataclass
class Replayed:
    """A replayed round's record (simulate format) beside the table's, and the difference."""

    record: dict[str, Any]
    round: RecordedRound | None = None
    differences: list[str] = field(default_factory=list)


def parse_card(token: str, where: str) -> Card:
    try:
        return Card.parse(token)
    except ValueError as exc:
        raise ReplayError(f"{where}: {exc}") from None


def parse_wager(text: str, where: str = "--wager") -> PlacedWager:
    """'1:banker:2500' -> seat 1, banker, 2500 cents."""
    parts = text.strip().split(":")
    if len(parts) != 3:
        raise ReplayError(f"{where} {shown(text)}: expected {WAGER_FORM}")
    seat, wager, cents = (part.strip() for part in parts)
    # Digits only, and few enough to be a seat and an amount: a 5,000-digit amount raised
    # Python's own ValueError out of int() (a traceback), and a wager name is a word.
    if not (seat.isdecimal() and cents.isdecimal() and len(seat) <= MAX_SEAT_DIGITS
            and len(cents) <= MAX_CENTS_DIGITS):
        raise ReplayError(f"{where} {shown(text)}: the seat and the cents are whole numbers "
                          f"of at most {MAX_SEAT_DIGITS} and {MAX_CENTS_DIGITS} digits "
                          f"({WAGER_FORM})")
    if not wager or len(wager) > MAX_WAGER_CHARS:
        raise ReplayError(f"{where} {shown(text)}: the wager is a name of 1 to "
                          f"{MAX_WAGER_CHARS} characters ({WAGER_FORM})")
    return PlacedWager(int(seat), wager, int(cents))



def _numbered_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(line number, text) of a file's lines, blank lines and # comments skipped."""
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if text:
            yield n, text


def parse_wagers(lines: Iterable[str], source: str) -> list[PlacedWager]:
    """A wager file: one SEAT:WAGER:CENTS a line; blank lines and # comments skipped."""
    return [parse_wager(text, f"{source}:{n}:") for n, text in _numbered_lines(lines)]


def check_wagers(game: Game, wagers: Sequence[PlacedWager], progressive_key: str | None,
                 where: str) -> None:
    """The checks the live table makes when each wager is placed (`Table.cmd_place_wager`):
    offered, limits, seat, and a Baccarat wager first (docs/rulings.md C15; in 21 Baccarat
    a Player or Banker wager, C21)."""
    placed: list[PlacedWager] = []
    for w in wagers:
        if w.wager == progressive_key:
            problem = None if 1 <= w.seat <= game.seats else \
                f"seat {w.seat} is not 1..{game.seats}"
        else:
            problem = check_wager(game, w)
            if problem is None:
                config = game.submission.wager(w.wager)
                problem = base_wager_missing(w, placed, without_base_wager=bool(
                    config is not None and config.without_base_wager),
                    twenty_one=game.config.is_21)
        if problem is not None:
            offered = ", ".join([*game.wager_rules, *([progressive_key] if progressive_key
                                                      else [])])
            raise ReplayError(f"{where}: wager {w.seat}:{w.wager}:{w.amount_cents} refused: "
                              f"{problem} (wagers offered: {offered})")
        placed.append(w)


def cards_from_lines(lines: Iterable[str], source: str) -> list[Card]:
    """A card file: one card a line (`K♠`, `KS`, `10h`); blank lines and # comments skipped."""
    return [parse_card(text, f"{source}:{n}") for n, text in _numbered_lines(lines)]


def rounds_from_simulate(lines: Iterable[str], source: str) -> list[RecordedRound]:
    """Rounds from `tablectl simulate --json` (or `replay --json`) output: each record's
    round cards, its wagers, and its settlements to compare with. The format lists every
    card taken from the shoe once, in order, so a card's index in its shoe is the count of
    the shoe's cards listed before it (a lost card leaves its gap, C7; the shoe's end,
    631a.15(e), is where it was). Simulated rounds (631a.15(d)) are not replayed: no wager
    counts in them."""
    rounds = []
    taken: dict[int, int] = {}  # shoe -> cards listed so far
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads_json(line)
            shoe = int(record["shoe"])
            index = taken.get(shoe, 0)
            cards: list[tuple[int, Card]] = []
            for c in record["cards"]:
                if c["hand"] in ROUND_HANDS:
                    cards.append((index, parse_card(str(c["card"]), f"{source}:{n}")))
                index += 1
            taken[shoe] = index
            if record.get("simulated"):
                continue
            rounds.append(RecordedRound(
                shoe, int(record["round"]), tuple(cards),
                tuple(_recorded_wagers(record["settlements"])),
                cover_before=cards[0][0] if record.get("cover_card") and cards else None,
                last_hand=bool(record.get("last_hand")), recorded=tuple(record["settlements"]),
                recorded_state="void" if record["void"] else "settled",
                source=f"{source}:{n} (round {record['round']} of shoe {shoe})"))
        except ReplayError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise ReplayError(f"{source}:{n}: not a round record of the simulate format "
                              f"(docs/simulate-format.md): {exc!r}") from None
    return rounds


def _recorded_wagers(settlements: Iterable[Mapping[str, Any]]) -> list[PlacedWager]:
    """The wagers a round's settlements were made on, base wagers first (as placed): Player
    and Banker, then the Tie (a base wager in 631a, optional in 21 Baccarat, 681a.6(c)-(d)),
    then the rest. Settlements come in payment order, where a Tie that won comes before
    the Player and Banker wagers it pushed."""
    wagers = [PlacedWager(int(s.get("seat", 1)), str(s["wager"]), int(s["amount_cents"]))
              for s in settlements if int(s["amount_cents"]) > 0]
    return sorted(wagers, key=lambda w: (w.wager not in BASE_WAGERS_21,
                                         w.wager not in BASE_WAGERS))


def round_from_store(row: Mapping[str, Any], cover_index: int | None,
                     progressive: Sequence[PlacedWager] = ()) -> RecordedRound:
    """A round as the table's store keeps it (`Store.round`): its cards with their shoe
    indexes, its wagers (and the progressive wagers the system accepted at its lock), and
    its settlements; `cover_index`: where the shoe's cover card came out, if it did."""
    cards = tuple((int(c["index"]), Card.parse(str(c["card"]))) for c in row["cards"])
    first = cards[0][0] if cards else 0
    after = cards[-1][0] + 1 if cards else 0
    wagers = [PlacedWager(int(w["seat"]), str(w["wager"]), int(w["amount_cents"]))
              for w in row["wagers"]]
    return RecordedRound(
        int(row["shoe_no"]), int(row["round_no"]), cards, tuple(wagers) + tuple(progressive),
        cover_before=cover_index if cover_index is not None and first <= cover_index <= after
        else None,
        last_hand=cover_index is not None and cover_index < first,
        recorded=tuple(row["settlements"]), recorded_state=str(row["state"]),
        source=f"round {row['round_no']} of shoe {row['shoe_no']} (id {row['round_id']})")


def replay_cards(game: Game, cards: Sequence[Card], wagers: Sequence[PlacedWager], *,
                 burn: bool = False, progressive: RoundProgressive | None = None
                 ) -> list[Replayed]:
    """Deal `cards` from index 0 as consecutive rounds, `wagers` placed before each round's
    first card (which locks the table, docs/rulings.md C1); `burn`: the first card is the
    shoe's first and is exposed and burned (631a.5(f), 681a.7(c))."""
    dealing = ShoeDealing(game, 1, progressive)
    if not burn:
        dealing.phase = Phase.BETTING
    records = _deal(dealing, _actions(dealing, list(enumerate(cards)), tuple(wagers)))
    return [Replayed(r) for r in records]


def replay_rounds(game: Game, rounds: Sequence[RecordedRound],
                  progressive: RoundProgressive | None = None,
                  wagers: Sequence[PlacedWager] | None = None) -> list[Replayed]:
    """Replay each recorded round on its own, at its place in its shoe, with its recorded
    wagers (or `wagers` for every round), and compare with what the table settled."""
    out = []
    for recorded in rounds:
        dealing = ShoeDealing(game, recorded.shoe_no, progressive)
        dealing.phase = Phase.BETTING
        dealing.round_no = recorded.round_no - 1
        dealing.last_hand_announced = recorded.last_hand and not game.reshuffles_at_cover_card
        dealing.cover_seen = recorded.last_hand
        if recorded.cards:
            dealing.last_index = recorded.cards[0][0] - 1
        stakes = tuple(wagers) if wagers is not None else recorded.wagers
        actions = _actions(dealing, list(recorded.cards), stakes, recorded.cover_before,
                           one_round=True)
        try:
            records = _deal(dealing, actions, recorded.source)
        except IncompleteRound:
            if recorded.recorded_state != "void":
                raise
            # The table voided it before its cards were complete (a misread or a fault
            # acknowledged, C6-C7): voided alike, under the table's section.
            section = next((str(s["section"]) for s in recorded.recorded), "631a.15(e)")
            records = dealing.void_open_round(section)
        # A table's round record holds no progressive settlement (the progressive system's
        # ledger does): the replayed one is then not compared.
        unrecorded = {progressive.wager_key} if progressive is not None and not any(
            s["wager"] == progressive.wager_key for s in recorded.recorded) else set()
        for record in records:
            done = Replayed(record, recorded)
            if recorded.recorded_state and wagers is None:
                done.differences = differences(record, recorded, unrecorded)
            out.append(done)
    return out


def _actions(dealing: ShoeDealing, cards: list[tuple[int, Card]],
             wagers: tuple[PlacedWager, ...], cover_before: int | None = None,
             one_round: bool = False) -> Iterator[Action]:
    """What the dealer does: the wagers before each round's first card, the cover card where
    it came out, then the cards."""
    rounds_opened = dealing.round_no
    for index, card in cards:
        if dealing.finished:
            return
        if dealing.phase is Phase.BETTING and not dealing.wagers:
            if one_round and dealing.round_no > rounds_opened:
                return
            if wagers:
                yield Bet(wagers)
        if cover_before is not None and index >= cover_before and not dealing.cover_seen:
            yield Cover(index)
        yield Draw(index, card)


def _deal(dealing: ShoeDealing, actions: Iterable[Action], source: str = "the cards"
          ) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for action in actions:
        records += dealing.apply(action)
    if dealing.round is not None:
        needed = dealing.round.coup.next_card().name.lower()
        raise IncompleteRound(records, f"{source}: the cards end before round "
                                       f"{dealing.round.no} is complete: the rules call for "
                                       f"the {needed.replace('_', ' ')} card next")
    return records


class IncompleteRound(ReplayError):
    """The cards ran out in the middle of a round; `records` holds the rounds completed."""

    def __init__(self, records: list[dict[str, Any]], message: str) -> None:
        super().__init__(message)
        self.records = records


def differences(record: Mapping[str, Any], recorded: RecordedRound,
                unrecorded: Set[str] = frozenset()) -> list[str]:
    """How the replayed round's settlements differ from the table's, wager by wager, on the
    money (`COMPARED`), leaving out the wager keys the table does not record in a round
    (`unrecorded`); [] when they agree."""
    if ("void" if record["void"] else "settled") != recorded.recorded_state:
        return [f"the table recorded the round {recorded.recorded_state}, the replay "
                f"{'void' if record['void'] else 'settled'} it"]
    got = [tuple(s[k] for k in COMPARED) for s in record["settlements"]
           if s["wager"] not in unrecorded]
    table = [tuple(s[k] for k in COMPARED) for s in recorded.recorded]
    out = [f"the table: {_line(t)}; the replay: no such settlement" for t in table
           if t not in got]
    out += [f"the replay: {_line(g)}; the table: no such settlement" for g in got
            if g not in table]
    return out


def _line(values: tuple[Any, ...]) -> str:
    return ", ".join(f"{k} {v}" for k, v in zip(COMPARED, values))
