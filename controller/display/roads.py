"""The scoreboard's roads, in pure code: rounds in, grids out (no I/O, no clock).

The rules, worked out in docs/roads.md:

- **Bead Plate**: one cell per round (ties included), six rows, filled down each column
  then left to right.
- **Big Road**: one cell per Banker or Player win. A streak of the same winner runs down
  one column; a change of winner starts the next column at the top. A tie takes no cell:
  it is counted on the cell before it; ties before the first Banker or Player win are
  `leading_ties` and are drawn on the first cell once it exists. A streak that reaches
  the bottom row, or meets a cell already taken, turns right and runs along its row
  (the dragon tail).
- **Big Eye Boy, Small Road, Cockroach Pig**: one red or blue mark per Big Road entry,
  comparing the Big Road's *logical* columns (streaks, tails included) at a distance of
  1, 2 or 3 columns. For an entry at depth `r` of streak `c`, with distance `k`:
  a new streak (`r == 0`) is red when streaks `c-1` and `c-1-k` have the same length;
  further down (`r >= 1`) it is blue exactly when streak `c-k` ends at depth `r - 1`
  (its length is `r`), else red. A road starts with the first entry that has the
  streaks it compares. The marks are laid out like the Big Road: a change of colour
  starts a new column.
- **Predictions**: the mark each derived road would get if the next round were a Banker
  win, or a Player win.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

ROWS = 6  # every road in the pit is six rows high


class Winner(Enum):
    BANKER = "banker"
    PLAYER = "player"
    TIE = "tie"


class Mark(Enum):
    """A derived road's mark: red when the Big Road repeats its own pattern, blue when not."""

    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class RoadRound:
    """One settled round as the roads see it."""

    winner: Winner
    banker_pair: bool = False
    player_pair: bool = False
    natural: bool = False
    winning_total: int = 0  # the winner's Point Count (either hand's on a tie)

    def to_json(self) -> dict[str, object]:
        return {"winner": self.winner.value, "banker_pair": self.banker_pair,
                "player_pair": self.player_pair, "natural": self.natural,
                "total": self.winning_total}


@dataclass(frozen=True)
class BeadCell:
    col: int
    row: int
    round: RoadRound


@dataclass(frozen=True)
class BigRoadCell:
    col: int  # where it is drawn (a dragon tail runs right of its streak's column)
    row: int
    streak: int  # the logical column: the n-th streak of the shoe, from 0
    depth: int  # position in its streak, from 0
    round: RoadRound
    ties: int = 0  # ties dealt after this round, before the next Banker or Player win


@dataclass(frozen=True)
class DerivedCell:
    col: int
    row: int
    mark: Mark


@dataclass(frozen=True)
class BigRoad:
    cells: tuple[BigRoadCell, ...]
    leading_ties: int  # ties before the shoe's first Banker or Player win

    @property
    def streak_lengths(self) -> tuple[int, ...]:
        lengths: list[int] = []
        for cell in self.cells:
            if cell.depth == 0:
                lengths.append(0)
            lengths[-1] += 1
        return tuple(lengths)


def bead_plate(rounds: Sequence[RoadRound], rows: int = ROWS) -> list[BeadCell]:
    return [BeadCell(i // rows, i % rows, r) for i, r in enumerate(rounds)]


def place_streaks(lengths: Iterable[int], rows: int = ROWS) -> list[list[tuple[int, int]]]:
    """Grid positions of each streak's entries, with dragon tails.

    A streak starts at the top of the column after the previous streak's first column
    (further right if a tail already took that top cell), runs down, and turns right
    for good when the next cell down is past the bottom or already taken.
    """
    taken: set[tuple[int, int]] = set()
    placed: list[list[tuple[int, int]]] = []
    start_col = -1
    for length in lengths:
        col = start_col + 1
        while (col, 0) in taken:
            col += 1
        start_col = col
        row, turned = 0, False
        cells = [(col, row)]
        taken.add((col, row))
        for _ in range(length - 1):
            if not turned and row + 1 < rows and (col, row + 1) not in taken:
                row += 1
            else:
                turned = True
                col += 1
                while (col, row) in taken:  # never draw over an older tail
                    col += 1
            cells.append((col, row))
            taken.add((col, row))
        placed.append(cells)
    return placed


def big_road(rounds: Sequence[RoadRound], rows: int = ROWS) -> BigRoad:
    streaks: list[list[RoadRound]] = []
    ties_after: list[int] = []  # per Banker/Player win, in order
    leading_ties = 0
    for r in rounds:
        if r.winner is Winner.TIE:
            if ties_after:
                ties_after[-1] += 1
            else:
                leading_ties += 1
            continue
        if streaks and streaks[-1][0].winner is r.winner:
            streaks[-1].append(r)
        else:
            streaks.append([r])
        ties_after.append(0)
    cells: list[BigRoadCell] = []
    for streak_no, (streak, positions) in enumerate(
            zip(streaks, place_streaks(len(s) for s in streaks), strict=True)):
        for depth, (r, (col, row)) in enumerate(zip(streak, positions, strict=True)):
            cells.append(BigRoadCell(col, row, streak_no, depth, r, ties_after[len(cells)]))
    return BigRoad(tuple(cells), leading_ties)


# The distance, in Big Road columns, each derived road compares across.
BIG_EYE_BOY, SMALL_ROAD, COCKROACH_PIG = 1, 2, 3
DERIVED_ROADS = {"big_eye_boy": BIG_EYE_BOY, "small_road": SMALL_ROAD,
                 "cockroach_pig": COCKROACH_PIG}


def derived_mark(lengths: Sequence[int], streak: int, depth: int, distance: int) -> Mark | None:
    """The mark for the Big Road entry at (`streak`, `depth`), given every streak's length
    up to and including that entry; None before the road has the streaks it compares."""
    if depth == 0:
        if streak < distance + 1:
            return None
        same = lengths[streak - 1] == lengths[streak - 1 - distance]
        return Mark.RED if same else Mark.BLUE
    if streak < distance:
        return None
    return Mark.BLUE if lengths[streak - distance] == depth else Mark.RED


def derived_marks(road: BigRoad, distance: int) -> list[Mark]:
    marks: list[Mark] = []
    lengths: list[int] = []
    for cell in road.cells:
        if cell.depth == 0:
            lengths.append(0)
        lengths[-1] += 1
        mark = derived_mark(lengths, cell.streak, cell.depth, distance)
        if mark is not None:
            marks.append(mark)
    return marks


def derived_road(marks: Sequence[Mark], rows: int = ROWS) -> list[DerivedCell]:
    runs: list[list[Mark]] = []
    for mark in marks:
        if runs and runs[-1][0] is mark:
            runs[-1].append(mark)
        else:
            runs.append([mark])
    return [DerivedCell(col, row, mark)
            for run, positions in zip(runs, place_streaks(len(r) for r in runs), strict=True)
            for mark, (col, row) in zip(run, positions, strict=True)]


def predict(road: BigRoad, winner: Winner, distance: int) -> Mark | None:
    """The mark a derived road would add if the next round were `winner` (Banker/Player)."""
    if winner is Winner.TIE:
        raise ValueError("a tie adds no Big Road entry, so no derived mark: ask for banker or "
                         "player")
    lengths = list(road.streak_lengths)
    if not lengths:
        return None
    if road.cells[-1].round.winner is winner:
        lengths[-1] += 1
        return derived_mark(lengths, len(lengths) - 1, lengths[-1] - 1, distance)
    lengths.append(1)
    return derived_mark(lengths, len(lengths) - 1, 0, distance)


@dataclass(frozen=True)
class ShoeCounts:
    rounds: int = 0
    banker: int = 0
    player: int = 0
    tie: int = 0
    banker_pairs: int = 0
    player_pairs: int = 0
    naturals: int = 0


def shoe_counts(rounds: Sequence[RoadRound]) -> ShoeCounts:
    return ShoeCounts(
        rounds=len(rounds),
        banker=sum(r.winner is Winner.BANKER for r in rounds),
        player=sum(r.winner is Winner.PLAYER for r in rounds),
        tie=sum(r.winner is Winner.TIE for r in rounds),
        banker_pairs=sum(r.banker_pair for r in rounds),
        player_pairs=sum(r.player_pair for r in rounds),
        naturals=sum(r.natural for r in rounds))


@dataclass(frozen=True)
class Roads:
    """Everything the scoreboard draws for one shoe, as JSON-ready data."""

    rounds: tuple[RoadRound, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, object]:
        road = big_road(self.rounds)
        derived: dict[str, object] = {}
        for name, distance in DERIVED_ROADS.items():
            derived[name] = [{"col": c.col, "row": c.row, "mark": c.mark.value}
                             for c in derived_road(derived_marks(road, distance))]
        predictions = {
            winner.value: {name: _mark_value(predict(road, winner, distance))
                           for name, distance in DERIVED_ROADS.items()}
            for winner in (Winner.BANKER, Winner.PLAYER)}
        counts = shoe_counts(self.rounds)
        return {
            "bead_plate": [{"col": c.col, "row": c.row, **c.round.to_json()}
                           for c in bead_plate(self.rounds)],
            "big_road": [{"col": c.col, "row": c.row, "ties": c.ties, **c.round.to_json()}
                         for c in road.cells],
            "leading_ties": road.leading_ties,
            **derived,
            "predictions": predictions,
            "counts": counts.__dict__,
        }


def _mark_value(mark: Mark | None) -> str | None:
    return None if mark is None else mark.value
